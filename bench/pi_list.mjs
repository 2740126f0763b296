#!/usr/bin/env node
// pi's own SessionManager.listAll() over $PI_CODING_AGENT_DIR/sessions, for the benchmark and
// cross-checks.  usage: PI_CODING_AGENT_DIR=DIR node bench/pi_list.mjs [--json]
// Prints the listing as JSON (pi's keys, ISO dates) with --json, else one line: "<count> <seconds>".
import path from "node:path";
import { pathToFileURL } from "node:url";

const here = path.dirname(new URL(import.meta.url).pathname);
const entry = path.join(here, "..", "tests", "oracle", "node_modules", "@mariozechner", "pi-coding-agent",
	"dist", "index.js");
const { SessionManager } = await import(pathToFileURL(entry).href);
const started = performance.now();
const listed = await SessionManager.listAll();
const seconds = (performance.now() - started) / 1000;
if (process.argv.includes("--json")) {
	const rows = listed.map((s) => ({
		path: s.path, id: s.id, cwd: s.cwd, name: s.name ?? null, parentSession: s.parentSessionPath ?? null,
		created: s.created.toISOString(), modified: s.modified.toISOString(), messageCount: s.messageCount,
		firstMessage: s.firstMessage,
	}));
	process.stdout.write(`${JSON.stringify(rows)}\n`);
} else {
	process.stdout.write(`${listed.length} ${seconds.toFixed(3)}\n`);
}
