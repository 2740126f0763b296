#!/usr/bin/env node
// pi's own totals of session files, as its footer computes them: open each file with pi's
// SessionManager (which migrates old versions IN PLACE — callers pass copies), then sum the
// usage of every assistant message over ALL entries (every branch), exactly as
// dist/modes/interactive/components/footer.js does (`sessionManager.getEntries()`).  The
// message, role and tool-call counts are plain sums over the same entries.
// usage: node stats_of.mjs FILE...
import { SessionManager } from "@mariozechner/pi-coding-agent";

const out = [];
for (const file of process.argv.slice(2)) {
	const sm = SessionManager.open(file);
	let input = 0, output = 0, cacheRead = 0, cacheWrite = 0, cost = 0, toolCalls = 0, compactions = 0;
	const roles = {};
	const models = {};
	const entries = sm.getEntries();
	const parents = new Set(entries.map((entry) => entry.parentId).filter((id) => id));
	for (const entry of entries) {
		if (entry.type === "compaction") compactions++;
		if (entry.type !== "message") continue;
		roles[entry.message.role] = (roles[entry.message.role] ?? 0) + 1;
		if (entry.message.role !== "assistant") continue;
		const usage = entry.message.usage;
		input += usage.input;
		output += usage.output;
		cacheRead += usage.cacheRead;
		cacheWrite += usage.cacheWrite;
		cost += usage.cost.total;
		const model = `${entry.message.provider}/${entry.message.model}`;
		models[model] = (models[model] ?? 0) + 1;
		toolCalls += entry.message.content.filter((block) => block.type === "toolCall").length;
	}
	out.push({
		path: file,
		tokens: { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite },
		cost,
		roles,
		models,
		toolCalls,
		compactions,
		leaves: entries.filter((entry) => !parents.has(entry.id)).length,
	});
}
process.stdout.write(JSON.stringify(out));
