// The chat page served at /: one self-contained document (no CDN, no external fonts or
// scripts) that streams replies from /v1/chat/completions with fetch and server-sent events.
#include <string>

#include "server/http_server.h"

namespace mw::server {

const std::string& chat_page_html() {
    static const std::string page = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memwall chat</title>
<style>
  :root { color-scheme: light dark; --accent: #2f6fdf; }
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column;
         height: 100vh; }
  header { padding: .5rem 1rem; border-bottom: 1px solid #8884; display: flex; gap: 1rem;
           align-items: center; flex-wrap: wrap; }
  header h1 { font-size: 1rem; margin: 0; }
  header label { font-size: .85rem; }
  header input { width: 9rem; }
  #log { flex: 1; overflow-y: auto; padding: 1rem; }
  .msg { max-width: 46rem; margin: 0 auto .8rem; white-space: pre-wrap; }
  .msg .who { font-size: .75rem; opacity: .6; }
  .user .text { background: #8882; border-radius: .5rem; padding: .4rem .6rem; }
  .error .text { color: #c33; }
  form { display: flex; gap: .5rem; padding: .7rem 1rem; border-top: 1px solid #8884; }
  textarea { flex: 1; font: inherit; min-height: 2.6rem; }
  button { font: inherit; padding: 0 1rem; }
  #stats { font-size: .8rem; opacity: .7; }
</style>
</head>
<body>
<header>
  <h1>memwall</h1>
  <label>System <input id="system" placeholder="optional"></label>
  <label>Temperature <input id="temperature" type="number" value="0.8" min="0" max="2" step="0.1"
    style="width:4rem"></label>
  <label>Max tokens <input id="max_tokens" type="number" value="256" min="1" style="width:5rem"></label>
  <label>API key <input id="key" type="password" autocomplete="off"></label>
  <span id="stats"></span>
</header>
<div id="log" aria-live="polite"></div>
<form id="form">
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter is a new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<script>
"use strict";
const log = document.getElementById("log");
const input = document.getElementById("input");
const history = [];
let controller = null;

function add(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const who = document.createElement("div");
  who.className = "who";
  who.textContent = role;
  const body = document.createElement("div");
  body.className = "text";
  body.textContent = text;
  div.append(who, body);
  log.append(div);
  log.scrollTop = log.scrollHeight;
  return body;
}

async function send(text) {
  history.push({role: "user", content: text});
  add("user", text);
  const out = add("assistant", "");
  out.parentElement.dataset.state = "streaming";
  const messages = [];
  const system = document.getElementById("system").value.trim();
  if (system) messages.push({role: "system", content: system});
  messages.push(...history);
  const headers = {"Content-Type": "application/json"};
  const key = document.getElementById("key").value;
  if (key) headers["Authorization"] = "Bearer " + key;
  controller = new AbortController();
  document.getElementById("stop").disabled = false;
  document.getElementById("send").disabled = true;
  const started = performance.now();
  let reply = "", first = 0, pieces = 0;
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST", headers, signal: controller.signal,
      body: JSON.stringify({messages, stream: true,
        temperature: Number(document.getElementById("temperature").value),
        max_tokens: Number(document.getElementById("max_tokens").value)})});
    if (!res.ok) {
      const err = await res.json().catch(() => ({error: {message: res.statusText}}));
      throw new Error(err.error ? err.error.message : res.statusText);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let at;
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (delta && delta.content) {
          if (!first) first = performance.now();
          reply += delta.content;
          pieces += 1;
          out.textContent = reply;
          log.scrollTop = log.scrollHeight;
        }
      }
    }
    history.push({role: "assistant", content: reply});
    const secs = (performance.now() - (first || started)) / 1000;
    document.getElementById("stats").textContent =
      "first token " + Math.round((first || performance.now()) - started) + " ms, " +
      (secs > 0 ? (pieces / secs).toFixed(1) : "-") + " pieces/s";
  } catch (e) {
    if (e.name !== "AbortError") add("error", String(e.message || e));
    if (reply) history.push({role: "assistant", content: reply});
  } finally {
    out.parentElement.dataset.state = "done";
    controller = null;
    document.getElementById("stop").disabled = true;
    document.getElementById("send").disabled = false;
  }
}

document.getElementById("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || controller) return;
  input.value = "";
  send(text);
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    document.getElementById("form").requestSubmit();
  }
});
document.getElementById("stop").addEventListener("click", () => controller && controller.abort());
</script>
</body>
</html>
)HTML";
    return page;
}

}  // namespace mw::server
