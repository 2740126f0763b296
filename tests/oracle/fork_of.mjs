#!/usr/bin/env node
// Forks as pi makes them, each then continued by one paid answer: `pi --fork SOURCE`
// (SessionManager.forkFrom: a new header with parentSession, every entry copied as it is)
// and `/fork` (createBranchedSession: the path to a leaf copied into a new file).
// usage: node fork_of.mjs from SOURCE DIR COST | node fork_of.mjs branch SOURCE LEAF_ID COST
// prints the new session file's path.
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [mode, source, where, cost] = process.argv.slice(2);
let sm;
if (mode === "from") {
	sm = SessionManager.forkFrom(source, "/work/forked", where);
} else {
	sm = SessionManager.open(source);
	sm.createBranchedSession(where);
}
sm.appendMessage({
	role: "assistant",
	content: [{ type: "text", text: "after the fork" }],
	provider: "acme",
	model: "m",
	usage: {
		input: 10,
		output: 1,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: 11,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: Number(cost) },
	},
	stopReason: "stop",
	timestamp: Date.now(),
});
process.stdout.write(sm.getSessionFile());
