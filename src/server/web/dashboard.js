// The cache dashboard: polls GET /hearth/stats (the numbers /metrics exports, from the
// same sources) once a second and redraws. Every shown number also sits, unformatted,
// in its element's data-value for tools and tests.
"use strict";

const KINDS = [
  ["exact", "exact"], ["resume", "resume"], ["partial", "prefix"], ["sticky", "sticky"], ["continuation", "session"],
  ["cold", "cold"],
];

function pick(obj, path) {
  return path.split(".").reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), obj);
}

function cell(text, value, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  if (text instanceof Node) td.appendChild(text); else td.textContent = text;
  if (value !== undefined) td.dataset.value = value;
  return td;
}

function meter(fraction) {
  const outer = document.createElement("div");
  outer.className = "meter";
  outer.setAttribute("role", "meter");
  outer.setAttribute("aria-valuemin", "0");
  outer.setAttribute("aria-valuemax", "100");
  outer.setAttribute("aria-valuenow", Math.round(fraction * 100));
  const inner = document.createElement("div");
  inner.style.width = Math.min(100, fraction * 100).toFixed(1) + "%";
  outer.appendChild(inner);
  return outer;
}

function render(s) {
  for (const el of document.querySelectorAll("[data-stat]")) {
    const v = pick(s, el.dataset.stat);
    el.dataset.value = v;
    el.textContent = hearth.fmtNum(v);
  }
  const share = s.tokens.prompt > 0 ? (100 * s.tokens.cached) / s.tokens.prompt : 0;
  document.getElementById("cached-share").textContent = hearth.fmtNum(share, 1) + "%";
  document.getElementById("ttft").textContent =
    s.ttft.count > 0 ? hearth.fmtNum(s.ttft.mean_seconds * 1000, 1) + " ms" : "–";
  const saves = s.cache.saves;
  const total = saves.cold + saves.continued + saves.finish + saves.evict + saves.shutdown;
  const st = document.getElementById("saves-total");
  st.textContent = hearth.fmtNum(total);
  st.dataset.value = total;
  document.getElementById("saves-detail").textContent =
    `finish ${saves.finish} · cold ${saves.cold} · continued ${saves.continued} · dropped ${saves.dropped}`;

  const hits = s.cache.hits;
  const requests = KINDS.reduce((n, [k]) => n + hits[k], 0);
  const bar = document.getElementById("hits-bar");
  const legend = document.getElementById("hits-legend");
  bar.replaceChildren();
  legend.replaceChildren();
  for (const [k, label] of KINDS) {
    const pct = requests > 0 ? (100 * hits[k]) / requests : 0;
    if (pct > 0) {
      const seg = document.createElement("div");
      seg.className = "k-" + k;
      seg.style.width = pct + "%";
      seg.title = `${label}: ${hits[k]}`;
      bar.appendChild(seg);
    }
    const item = document.createElement("span");
    item.dataset.kind = k;
    item.dataset.value = hits[k];
    item.innerHTML = `<i class="k-${k}"></i>`;
    item.append(`${label} ${hits[k]} (${hearth.fmtNum(pct, 1)}%)`);
    legend.appendChild(item);
  }

  const tiers = document.getElementById("tiers");
  tiers.replaceChildren();
  for (const t of s.cache.tiers) {
    const tr = document.createElement("tr");
    tr.dataset.tier = t.tier;
    tr.append(cell(t.tier), cell(hearth.fmtNum(t.rows), t.rows, "num"),
              cell(hearth.fmtBytes(t.bytes), t.bytes, "num"),
              cell(t.quota_bytes ? hearth.fmtBytes(t.quota_bytes) : "–", t.quota_bytes, "num"),
              cell(meter(t.quota_bytes ? t.bytes / t.quota_bytes : 0)));
    tiers.appendChild(tr);
  }

  const models = document.getElementById("models");
  models.replaceChildren();
  for (const m of s.models) {
    const tr = document.createElement("tr");
    tr.dataset.model = m.id;
    tr.append(cell(m.id), cell(`${m.active_sequences} / ${m.n_seq_max}`, m.active_sequences, "num"),
              cell(hearth.fmtNum(m.queued_requests), m.queued_requests, "num"),
              cell(hearth.fmtNum(m.completion_tokens), m.completion_tokens, "num"),
              cell(hearth.fmtNum(m.tokens_per_second, 1), m.tokens_per_second, "num"),
              cell(hearth.fmtNum(m.last_tokens_per_second, 1), m.last_tokens_per_second, "num"));
    models.appendChild(tr);
  }
}

async function poll() {
  try {
    const stats = await hearth.json("/hearth/stats");
    render(stats);
    document.body.dataset.updated = String(Date.now());
    document.getElementById("status").textContent = "live · " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = "cannot read /hearth/stats: " + e.message;
  }
  setTimeout(poll, 1000);
}

document.addEventListener("DOMContentLoaded", poll);
