#!/usr/bin/env node
// Print the session file `pi --continue` (0.73.1) opens when started in the current directory
// without --session-dir, as JSON: {"opened": "/abs/file.jsonl"} or {"opened": null} (pi starts a
// new session).  The session dir is main.js's own expression (as in session_dir.mjs), then
// main.js's call: SessionManager.continueRecent(cwd, sessionDir) — pi's real isValidSessionFile
// and findMostRecentSession.  Note: like pi, this creates the cwd's empty bucket dir if missing.
// usage: (cd CWD && HOME=… PI_CODING_AGENT_DIR=… node continue_recent.mjs)
import { existsSync } from "node:fs";
import { ENV_SESSION_DIR, expandTildePath, getAgentDir } from "./node_modules/@mariozechner/pi-coding-agent/dist/config.js";
import { SessionManager } from "./node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js";
import { SettingsManager } from "./node_modules/@mariozechner/pi-coding-agent/dist/core/settings-manager.js";

const cwd = process.cwd();
const startupSettingsManager = SettingsManager.create(cwd, getAgentDir());
const envSessionDir = process.env[ENV_SESSION_DIR];
const sessionDir = (envSessionDir ? expandTildePath(envSessionDir) : undefined) ?? startupSettingsManager.getSessionDir();
const file = SessionManager.continueRecent(cwd, sessionDir).getSessionFile();
// a new session's file is only written once the first reply arrives: an existing file was opened
process.stdout.write(JSON.stringify({ opened: file && existsSync(file) ? file : null }));
