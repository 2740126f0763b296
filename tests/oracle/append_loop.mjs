#!/usr/bin/env node
// An agent writing to a session while seance writes to it: the other side of the race tests.
//
// usage: node append_loop.mjs PATH [--count N] [--interval-us U] [--held-fd]
//
// Default mode is pi's own: SessionManager.open(PATH), then N × appendMessage(), which pi
// persists with appendFileSync (open, write one line, close: "reopen per line").
// --held-fd is the other kind of agent: it opens PATH once for appending and keeps writing
// whole lines (pi's entry shape, parentId chained from the file's leaf) through that fd.
//
// Protocol: prints "ready" once the file is open, then appends; between appends it waits
// U microseconds (default 200). When done it prints one JSON line: {"ids": [...]} — every
// entry id it appended, in order. Exit 0, or 1 with the error on stderr.

import fs from "node:fs";
import nodeCrypto from "node:crypto";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const argv = process.argv.slice(2);
const file = argv[0];
let count = 100;
let intervalUs = 200;
let heldFd = false;
for (let i = 1; i < argv.length; i++) {
	if (argv[i] === "--count") count = Number(argv[++i]);
	else if (argv[i] === "--interval-us") intervalUs = Number(argv[++i]);
	else if (argv[i] === "--held-fd") heldFd = true;
	else {
		process.stderr.write(`unknown argument ${argv[i]}\n`);
		process.exit(2);
	}
}

const pause = new Int32Array(new SharedArrayBuffer(4));
function sleepUs(us) {
	if (us <= 0) return;
	const until = process.hrtime.bigint() + BigInt(us) * 1000n;
	if (us >= 2000) Atomics.wait(pause, 0, 0, Math.floor(us / 1000));
	while (process.hrtime.bigint() < until) {
		/* spin: sub-millisecond waits */
	}
}

const manager = SessionManager.open(file);
const ids = [];
process.stdout.write("ready\n");

if (!heldFd) {
	for (let n = 0; n < count; n++) {
		const role = n % 2 === 0 ? "user" : "assistant";
		const message =
			role === "user"
				? { role, content: `agent line ${n}`, timestamp: Date.now() }
				: {
						role,
						content: [{ type: "text", text: `agent reply ${n}` }],
						api: "anthropic-messages",
						provider: "anthropic",
						model: "claude-sonnet-4-5",
						usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
						stopReason: "stop",
						timestamp: Date.now(),
					};
		ids.push(manager.appendMessage(message));
		sleepUs(intervalUs);
	}
} else {
	let parent = manager.getLeafId();
	const fd = fs.openSync(file, "a");
	for (let n = 0; n < count; n++) {
		const id = nodeCrypto.randomUUID().slice(0, 8);
		const entry = {
			type: "message",
			id,
			parentId: parent,
			timestamp: new Date().toISOString(),
			message: { role: "user", content: `held-fd line ${n}`, timestamp: Date.now() },
		};
		fs.writeSync(fd, `${JSON.stringify(entry)}\n`);
		ids.push(id);
		parent = id;
		sleepUs(intervalUs);
	}
	fs.closeSync(fd);
}
process.stdout.write(`${JSON.stringify({ ids })}\n`);
