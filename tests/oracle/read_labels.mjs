#!/usr/bin/env node
// Print what pi's own SessionManager reads as labels, for label round-trip tests:
// for each file, {path, leafId, labels: {entryId: label} from getLabel() for every entry,
// treeLabels: {entryId: label} from getTree()}.  Opening never writes a v3 file.
// usage: node read_labels.mjs FILE...
import { SessionManager } from "@mariozechner/pi-coding-agent";

const out = [];
for (const file of process.argv.slice(2)) {
	const sm = SessionManager.open(file);
	const labels = {};
	for (const entry of sm.getEntries()) {
		const label = sm.getLabel(entry.id);
		if (label !== undefined) labels[entry.id] = label;
	}
	const treeLabels = {};
	const stack = [...sm.getTree()];
	while (stack.length) {
		const node = stack.pop();
		if (node.label !== undefined) treeLabels[node.entry.id] = node.label;
		stack.push(...node.children);
	}
	out.push({ path: file, leafId: sm.getLeafId(), labels, treeLabels });
}
process.stdout.write(JSON.stringify(out));
