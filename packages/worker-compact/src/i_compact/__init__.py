"""Compaction worker for the i agent runtime"""
