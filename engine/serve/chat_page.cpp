#include "engine/serve/chat_page.h"

namespace xft::engine::serve {
namespace {

// Model output only ever reaches the page through textContent, never innerHTML.
constexpr std::string_view kChatPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>xftctl chat</title>
<link rel="icon" href="data:,">
<style>
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; }
body { display: flex; flex-direction: column; background: #f6f7f9; color: #1f2328;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, footer { background: #fff; padding: 8px 16px; }
header { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; border-bottom: 1px solid #d8dee4; }
header h1 { font-size: 16px; margin: 0; }
header label, #model { font-size: 13px; color: #57606a; }
header input { width: 5em; font: inherit; padding: 2px 4px; border: 1px solid #d0d7de; border-radius: 4px; }
header #api-key { width: 10em; }
.spacer { flex: 1; }
#messages { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: min(46em, 85%); padding: 8px 12px; border-radius: 12px; white-space: pre-wrap;
       overflow-wrap: anywhere; }
.msg.user { align-self: flex-end; background: #0969da; color: #fff; border-bottom-right-radius: 4px; }
.msg.assistant { align-self: flex-start; background: #fff; border: 1px solid #d8dee4; border-bottom-left-radius: 4px; }
.msg.assistant:empty::before { content: "\2026"; color: #8c959f; }
.msg.assistant[data-done]:empty { display: none; }
.msg.assistant.stopped::after { content: " [stopped]"; color: #8c959f; font-size: 12px; }
.msg.error { align-self: center; background: #ffebe9; border: 1px solid #ff8182; color: #82071e; font-size: 14px; }
footer { border-top: 1px solid #d8dee4; }
.composer { display: flex; gap: 8px; align-items: flex-end; }
#input { flex: 1; resize: vertical; min-height: 2.8em; max-height: 40vh; font: inherit; padding: 6px 8px;
         border: 1px solid #d0d7de; border-radius: 6px; }
button { font: inherit; padding: 6px 14px; border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa; cursor: pointer; }
button:disabled { opacity: .5; cursor: default; }
#send { background: #1f883d; border-color: #1a7f37; color: #fff; }
#status { margin-top: 6px; font-size: 12px; color: #57606a; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<header>
  <h1>xftctl chat</h1><span id="model"></span><span class="spacer"></span>
  <label>max tokens <input id="max-tokens" type="number" min="1" value="256"></label>
  <label>temperature <input id="temperature" type="number" min="0" max="2" step="0.1" value="0.7"></label>
  <label>API key <input id="api-key" type="password" autocomplete="off" placeholder="none"></label>
  <button id="new-chat" type="button">New chat</button>
</header>
<main id="messages" aria-live="polite"></main>
<footer>
  <div class="composer">
    <textarea id="input" rows="2" placeholder="Message (Enter sends, Shift+Enter adds a line)" autofocus></textarea>
    <button id="send" type="button">Send</button>
    <button id="stop" type="button" disabled>Stop</button>
  </div>
  <div id="status"><span id="server-stats">server: waiting for /metrics</span> &middot;
    <span id="answer-stats">this answer: none yet</span></div>
</footer>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const ui = { messages: $("messages"), input: $("input"), send: $("send"), stop: $("stop"),
             maxTokens: $("max-tokens"), temperature: $("temperature"), apiKey: $("api-key"),
             model: $("model"), server: $("server-stats"), answer: $("answer-stats") };
const KEY_STORE = "xftctl.apiKey";
let history = [];       // the whole conversation, sent with every request
let modelId = null;     // data[0].id of GET /v1/models
let controller = null;  // aborts the answer being streamed

// Starting values from the query string, e.g. /?temperature=0&max_tokens=24.
const query = new URLSearchParams(location.search);
for (const [name, input] of [["temperature", ui.temperature], ["max_tokens", ui.maxTokens]])
  if (query.has(name)) input.value = query.get(name);
ui.apiKey.value = localStorage.getItem(KEY_STORE) || "";
ui.apiKey.addEventListener("change", () => { localStorage.setItem(KEY_STORE, ui.apiKey.value.trim()); loadModel(); });

function numberOr(text, fallback) { const v = parseFloat(text); return Number.isFinite(v) ? v : fallback; }
function authHeaders(extra) {
  const key = ui.apiKey.value.trim();
  return Object.assign(key ? { Authorization: "Bearer " + key } : {}, extra);
}
function scrollDown() { ui.messages.scrollTop = ui.messages.scrollHeight; }
function addBubble(kind, text) {
  const div = document.createElement("div");
  div.className = "msg " + kind;
  div.textContent = text;
  ui.messages.appendChild(div);
  scrollDown();
  return div;
}
async function errorText(response) {  // {"error": {"message": ...}} or whatever came back
  const body = await response.text();
  let message = body || response.statusText;
  try { message = JSON.parse(body).error.message; } catch (e) { /* not the OpenAI error shape */ }
  return "HTTP " + response.status + ": " + message;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models", { headers: authHeaders() });
    if (!r.ok) throw new Error(await errorText(r));
    modelId = (await r.json()).data[0].id;
    ui.model.textContent = modelId;
  } catch (e) {
    modelId = null;
    ui.model.textContent = "no model: " + e.message;
  }
}

function metric(text, name) {  // a Prometheus sample line: name{labels} value
  const m = text.match(new RegExp("^" + name + "(?:\\{[^}]*\\})?\\s+(\\S+)", "m"));
  return m ? Number(m[1]) : NaN;
}
async function pollMetrics() {
  try {
    const r = await fetch("/metrics", { headers: authHeaders(), cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const t = await r.text(), tps = metric(t, "xftctl_decode_tokens_per_second");
    ui.server.textContent = "server: " + (Number.isNaN(tps) ? "?" : tps.toFixed(1)) + " tokens/s, " +
      metric(t, "xftctl_requests_running") + " running, " + metric(t, "xftctl_requests_waiting") + " waiting";
  } catch (e) {
    ui.server.textContent = "server: no metrics (" + e.message + ")";
  }
}

function showAnswerStats(s) {  // tokens/s after the first token, as the server counts decode speed
  let text = "this answer: " + s.tokens + " tokens";
  if (s.first) text += ", first after " + Math.round(s.first - s.start) + " ms";
  if (s.tokens > 1 && s.last > s.first) text += ", " + ((s.tokens - 1) * 1000 / (s.last - s.first)).toFixed(1) + " tokens/s";
  ui.answer.textContent = text;
}
function setBusy(busy) { ui.send.disabled = busy; ui.stop.disabled = !busy; }

// Reads server-sent events ("data: {json}" lines, events split by blank lines,
// "data: [DONE]" last) and calls onChunk with each parsed chunk.
async function readEvents(body, onChunk) {
  const reader = body.getReader(), decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the stream ended before data: [DONE]");
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const data = buffer.slice(0, end).split("\n").filter((l) => l.startsWith("data:"))
                         .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      buffer = buffer.slice(end + 2);
      if (data === "[DONE]") { reader.cancel().catch(() => {}); return; }
      if (data) onChunk(JSON.parse(data));
    }
  }
}

async function send() {
  const text = ui.input.value;
  if (!text.trim() || controller) return;
  ui.input.value = "";
  const conversation = history;  // New chat during the answer starts a new array
  addBubble("user", text);
  conversation.push({ role: "user", content: text });
  const bubble = addBubble("assistant", "");
  const stats = { tokens: 0, start: performance.now(), first: 0, last: 0 };
  const myController = controller = new AbortController();
  let answer = "";
  setBusy(true);
  showAnswerStats(stats);
  try {
    if (!modelId) await loadModel();
    const response = await fetch("/v1/chat/completions", {
      method: "POST", signal: myController.signal, headers: authHeaders({ "Content-Type": "application/json" }),
      body: JSON.stringify({ model: modelId || undefined, messages: conversation, stream: true, stream_options: { include_usage: true },
                             max_tokens: Math.round(numberOr(ui.maxTokens.value, 256)),
                             temperature: numberOr(ui.temperature.value, 0.7) }) });
    if (!response.ok) throw new Error(await errorText(response));
    await readEvents(response.body, (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message);
      const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
      if (delta && delta.content) {
        answer += delta.content;
        bubble.textContent = answer;
        stats.last = performance.now();
        if (!stats.first) stats.first = stats.last;
        stats.tokens++;
        scrollDown();
      }
      if (chunk.usage) stats.tokens = chunk.usage.completion_tokens;
      showAnswerStats(stats);
    });
  } catch (e) {
    if (e.name === "AbortError") bubble.classList.add("stopped");
    else addBubble("error", e.message);
  } finally {
    myController.abort();  // closes the connection after an error; nothing once the stream has ended
    bubble.dataset.done = "1";
    if (answer) conversation.push({ role: "assistant", content: answer });
    else conversation.pop();  // nothing came back: forget the question
    if (controller === myController) { controller = null; setBusy(false); }
    pollMetrics();
  }
}

function newChat() {
  if (controller) controller.abort();
  history = [];
  ui.messages.replaceChildren();
  ui.answer.textContent = "this answer: none yet";
  ui.input.focus();
}

ui.send.addEventListener("click", send);
ui.stop.addEventListener("click", () => { if (controller) controller.abort(); });
$("new-chat").addEventListener("click", newChat);
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
loadModel();
pollMetrics();
setInterval(pollMetrics, 2000);
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view chat_page_html() { return kChatPage; }

}  // namespace xft::engine::serve
