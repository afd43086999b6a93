// The chat page: a model picker (/v1/models), streaming replies from
// /v1/chat/completions (SSE), a stop button that aborts the request, and per turn how
// the prompt met the KV cache (usage.hearth.cache_hit, prompt_tokens_details) and the
// decode speed the browser saw.
"use strict";

const $ = (id) => document.getElementById(id);
let conversation = [];
let controller = null;

function addTurn(role, text) {
  $("empty").hidden = true;
  const div = document.createElement("div");
  div.className = "turn " + role;
  const body = document.createElement("div");
  body.className = "text";
  body.textContent = text;
  div.appendChild(body);
  $("log").appendChild(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

function pill(text, cls, title) {
  const span = document.createElement("span");
  span.className = "pill" + (cls ? " " + cls : "");
  span.textContent = text;
  if (title) span.title = title;
  return span;
}

// The footer of an assistant turn: hit kind, cached/prompt tokens, tokens/s, TTFT.
function showMeta(turn, m) {
  const meta = document.createElement("div");
  meta.className = "meta";
  if (m.usage) {
    const kind = (m.usage.hearth && m.usage.hearth.cache_hit) || "unknown";
    const cached = (m.usage.prompt_tokens_details || {}).cached_tokens || 0;
    turn.dataset.cacheHit = kind;
    turn.dataset.cachedTokens = cached;
    turn.dataset.promptTokens = m.usage.prompt_tokens;
    turn.dataset.completionTokens = m.usage.completion_tokens;
    const cls = kind === "cold" ? "hit-cold" : kind === "exact" ? "hit-exact" : "hit-warm";
    meta.appendChild(pill(kind === "cold" ? "cold" : "warm · " + kind, cls,
                          "How this prompt met the KV cache"));
    meta.appendChild(pill(hearth.fmtNum(cached) + " / " + hearth.fmtNum(m.usage.prompt_tokens) +
                          " prompt tokens cached"));
    const n = m.usage.completion_tokens;
    if (n > 1 && m.decodeMs > 0) {
      const tps = (n - 1) / (m.decodeMs / 1000);
      turn.dataset.tokensPerSecond = tps.toFixed(1);
      meta.appendChild(pill(hearth.fmtNum(tps, 1) + " tok/s", "", "Decode speed seen by the browser"));
    }
  }
  if (m.ttftMs >= 0) meta.appendChild(pill("TTFT " + hearth.fmtNum(m.ttftMs, 1) + " ms"));
  if (m.stopped) meta.appendChild(pill("stopped"));
  turn.appendChild(meta);
}

// Yields each SSE event's data from a fetch Response body.
async function* sseData(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (line.startsWith("data: ")) yield line.slice(6);
      }
    }
  }
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("model").disabled = busy;
}

async function send(text) {
  conversation.push({ role: "user", content: text });
  addTurn("user", text);
  const turn = addTurn("assistant", "");
  const body = turn.querySelector(".text");
  body.classList.add("cursor");
  turn.dataset.state = "streaming";
  controller = new AbortController();
  setBusy(true);
  const m = { ttftMs: -1, decodeMs: 0, stopped: false, usage: null };
  const t0 = performance.now();
  let tFirst = 0;
  let reply = "";
  try {
    const res = await hearth.api("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      signal: controller.signal,
      body: JSON.stringify({
        model: $("model").value,
        messages: conversation,
        max_tokens: Number($("max-tokens").value) || 64,
        temperature: Number($("temperature").value),
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    if (!res.ok) {
      const err = await res.json().catch(() => ({}));
      throw new Error((err.error && err.error.message) || res.status + " " + res.statusText);
    }
    for await (const data of sseData(res)) {
      if (data === "[DONE]") break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) m.usage = chunk.usage;
      const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
      if (delta && delta.content) {
        if (!tFirst) { tFirst = performance.now(); m.ttftMs = tFirst - t0; }
        reply += delta.content;
        body.textContent = reply;
        turn.scrollIntoView({ block: "end" });
      }
    }
    if (tFirst) m.decodeMs = performance.now() - tFirst;
  } catch (e) {
    if (e.name === "AbortError") {
      m.stopped = true;
    } else {
      turn.classList.add("error");
      body.textContent = reply + (reply ? "\n" : "") + "Error: " + e.message;
    }
  } finally {
    body.classList.remove("cursor");
    controller = null;
    setBusy(false);
  }
  if (reply) conversation.push({ role: "assistant", content: reply });
  showMeta(turn, m);
  turn.dataset.state = m.stopped ? "stopped" : "done";
  $("prompt").focus();
}

async function loadModels() {
  try {
    const list = await hearth.json("/v1/models");
    const select = $("model");
    select.replaceChildren();
    for (const model of list.data) {
      const opt = document.createElement("option");
      opt.value = opt.textContent = model.id;
      select.appendChild(opt);
    }
    $("status").textContent = list.data.length + " model" + (list.data.length === 1 ? "" : "s");
    document.body.dataset.ready = "1";
  } catch (e) {
    $("status").textContent = "cannot list models: " + e.message;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || controller) return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => controller && controller.abort());
  $("clear").addEventListener("click", () => {
    if (controller) controller.abort();
    conversation = [];
    for (const t of document.querySelectorAll(".turn")) t.remove();
    $("empty").hidden = false;
  });
  loadModels();
});
