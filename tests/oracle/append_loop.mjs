#!/usr/bin/env node
// An agent writing to a session while seance writes to it: the other side of the race tests.
//
// usage: node append_loop.mjs PATH [PATH ...] [--count N] [--interval-us U] [--held-fd]
//                               [--keep-format] [--until-file STOP]
//
// Default mode is pi's own: SessionManager.open(PATH), then N × appendMessage(), which pi
// persists with appendFileSync (open, write one line, close: "reopen per line").
// --held-fd is the other kind of agent: it opens PATH once for appending and keeps writing
// whole lines (pi's entry shape, parentId chained from the file's leaf) through that fd.
// Several PATHs: one agent per file, appending round-robin (one line to each per step), so
// one node start serves many trials.
// --keep-format: pi rewrites an old (v1/v2) file to v3 when it opens it; this suppresses that
// one rewrite, so the file stays old while pi appends to it — an older pi appending to its
// own v2 file (identical line shape), which is what seance's migration may race with.
// --until-file STOP: keep going (up to N steps) until the file STOP exists.
// --word W: each user line ends with the word W (a test searches for what was just appended).
//
// Protocol: prints "ready" once the files are open, then appends; between appends it waits
// U microseconds (default 200). When done it prints one JSON line: {"ids": [...]} — every
// entry id it appended, in order (with several PATHs also "byFile": {PATH: [...]}).
// Exit 0, or 1 with the error on stderr.

import fs from "node:fs";
import nodeCrypto from "node:crypto";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const argv = process.argv.slice(2);
const files = [];
let count = 100;
let intervalUs = 200;
let heldFd = false;
let keepFormat = false;
let untilFile = null;
let word = "";
for (let i = 0; i < argv.length; i++) {
	if (argv[i] === "--count") count = Number(argv[++i]);
	else if (argv[i] === "--interval-us") intervalUs = Number(argv[++i]);
	else if (argv[i] === "--held-fd") heldFd = true;
	else if (argv[i] === "--keep-format") keepFormat = true;
	else if (argv[i] === "--until-file") untilFile = argv[++i];
	else if (argv[i] === "--word") word = ` ${argv[++i]}`;
	else if (argv[i].startsWith("--")) {
		process.stderr.write(`unknown argument ${argv[i]}\n`);
		process.exit(2);
	} else files.push(argv[i]);
}
if (files.length === 0) {
	process.stderr.write("usage: append_loop.mjs PATH [PATH ...] [options]\n");
	process.exit(2);
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

function openManager(file) {
	if (!keepFormat) return SessionManager.open(file);
	const rewrite = SessionManager.prototype._rewriteFile;
	SessionManager.prototype._rewriteFile = () => {};
	try {
		return SessionManager.open(file);
	} finally {
		SessionManager.prototype._rewriteFile = rewrite;
	}
}

function message(n) {
	const role = n % 2 === 0 ? "user" : "assistant";
	return role === "user"
		? { role, content: `agent line ${n}${word}`, timestamp: Date.now() }
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
}

const agents = files.map((file) => {
	const manager = openManager(file);
	return { file, manager, parent: manager.getLeafId(), fd: heldFd ? fs.openSync(file, "a") : null, ids: [] };
});
const ids = [];
process.stdout.write("ready\n");

for (let n = 0; n < count; n++) {
	if (untilFile !== null && fs.existsSync(untilFile)) break;
	for (const agent of agents) {
		let id;
		if (!heldFd) {
			id = agent.manager.appendMessage(message(n));
		} else {
			id = nodeCrypto.randomUUID().slice(0, 8);
			const entry = {
				type: "message",
				id,
				parentId: agent.parent,
				timestamp: new Date().toISOString(),
				message: { role: "user", content: `held-fd line ${n}`, timestamp: Date.now() },
			};
			fs.writeSync(agent.fd, `${JSON.stringify(entry)}\n`);
			agent.parent = id;
		}
		agent.ids.push(id);
		ids.push(id);
		sleepUs(intervalUs);
	}
}
for (const agent of agents) if (agent.fd !== null) fs.closeSync(agent.fd);
const result = { ids };
if (files.length > 1) result.byFile = Object.fromEntries(agents.map((agent) => [agent.file, agent.ids]));
process.stdout.write(`${JSON.stringify(result)}\n`);
