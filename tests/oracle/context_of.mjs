#!/usr/bin/env node
// Print pi's own reading of session files as JSON: for each path, open it with pi's
// SessionManager (which migrates old versions IN PLACE — callers pass copies) and
// record the context at the leaf, the leaf id, the tree and the session name.
// usage: node context_of.mjs FILE...
import { SessionManager } from "@mariozechner/pi-coding-agent";

function text(message) {
	if (message.role === "compactionSummary" || message.role === "branchSummary") return message.summary ?? "";
	const content = message.content;
	if (typeof content === "string") return content;
	if (Array.isArray(content)) return content.filter((b) => b && b.type === "text").map((b) => b.text).join("\n");
	return "";
}

const out = [];
for (const file of process.argv.slice(2)) {
	const sm = SessionManager.open(file);
	const ctx = sm.buildSessionContext();
	const nodes = [];
	const stack = [...sm.getTree()].reverse();
	while (stack.length) {
		const node = stack.pop();
		nodes.push({ id: node.entry.id, type: node.entry.type, label: node.label ?? null });
		for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
	}
	out.push({
		path: file,
		leafId: sm.getLeafId(),
		name: sm.getSessionName() ?? null,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model ?? null,
		messages: ctx.messages.map((m) => ({ role: m.role, text: text(m) })),
		nodes,
	});
}
process.stdout.write(JSON.stringify(out));
