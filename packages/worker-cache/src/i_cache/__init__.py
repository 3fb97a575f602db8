"""Prompt-cache preparation and statistics worker for the i agent runtime"""
