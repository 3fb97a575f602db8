#!/usr/bin/env node
// A `prompts` replacement in plain Node.js (no npm packages): the system_prompt hook keeps the
// core's default prompt and appends the house rules. NDJSON on stdin/stdout, one frame per line,
// at most 48 MiB, nothing but frames on stdout; unknown events come back unchanged.
"use strict";

const MAX_FRAME_BYTES = 48 * 1024 * 1024;
const HOUSE_RULES = "House rules: answer in British English; never push to the main branch.";

if (process.argv[2] === "--version") {
  process.stdout.write("house-prompt 1.0.0 (i-protocol 1)\n");
  process.exit(0);
}

function answer(frame) {
  process.stdout.write(JSON.stringify(frame) + "\n"); // one write per frame: a pipe flushes it
}

function handle(line) {
  const head = /^\s*\{\s*"id"\s*:\s*(\d{1,20})\s*[,}]/.exec(line.subarray(0, 128).toString("latin1"));
  const peeked = head ? Number(head[1]) : null;
  if (line.length > MAX_FRAME_BYTES) {
    if (peeked === null) process.exit(2);
    return answer({ id: peeked, error: `request frame exceeds the ${MAX_FRAME_BYTES}-byte limit` });
  }
  let frame;
  try {
    frame = JSON.parse(line.toString("utf8"));
  } catch (error) {
    if (peeked === null) process.exit(2);
    return answer({ id: peeked, error: `request is not valid JSON: ${error.message}` });
  }
  const id = head ? BigInt(head[1]) : frame.id; // ids up to 2**64-1 lose precision as Numbers
  if (typeof id !== "bigint" && !(Number.isSafeInteger(id) && id >= 0)) {
    process.stderr.write("house-prompt: a request without a valid id; stopping\n");
    process.exit(2);
  }
  const data = frame.data === undefined ? {} : frame.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return answerRaw(id, '"error":"request data must be an object"');
  }
  if (frame.event === "system_prompt") {
    const base = typeof data.prompt === "string" && data.prompt.trim() ? data.prompt : "You are a careful agent.";
    data.prompt = `${base}\n\n${HOUSE_RULES}`;
  }
  return answerRaw(id, `"data":${JSON.stringify(data)}`);
}

function answerRaw(id, rest) {
  // The id is written from its digits, so a 64-bit id is echoed exactly.
  process.stdout.write(`{"id":${id.toString()},${rest}}\n`);
}

let pending = [];
process.stdin.on("data", (chunk) => {
  let start = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
    pending.push(chunk.subarray(start, nl + 1));
    handle(Buffer.concat(pending));
    pending = [];
    start = nl + 1;
  }
  if (start < chunk.length) {
    pending.push(chunk.subarray(start));
  }
});
