// Drives hearth's web UI in a real browser (Debian's chromium, through puppeteer-core):
// the chat page streams a reply, marks the second turn warm, stops a reply on Stop; the
// dashboard's numbers equal /metrics and /hearth/stats. Run by tests/server/web_ui_test.cpp.
// Usage: node browser_check.mjs URL API_KEY MODEL [SCREENSHOT_DIR]
// Prints "ALL OK" on success; exits non-zero with the reason otherwise.
import puppeteer from "puppeteer-core";

// The Prometheus names the dashboard's numbers are checked against: one place to update
// when /metrics names change. Keys are /hearth/stats paths; `{tier}` and `{model}` are
// filled in per tier / model.
const METRIC_NAMES = {
  "tokens.prompt": 'hearth_prompt_tokens_total{model="{model}"}',
  "tokens.cached": 'hearth_cached_prompt_tokens_total{model="{model}"}',
  "tokens.completion": 'hearth_completion_tokens_total{model="{model}"}',
  "requests.in_flight": "hearth_requests_in_flight",
  "requests.queued": "hearth_queue_depth",
  "requests.rejected_busy": "hearth_requests_rejected_busy_total",
  "cache.evictions": "hearth_cache_evictions_total",
  "hits.exact": 'hearth_request_prompt_starts_total{kind="exact"}',
  "hits.resume": 'hearth_request_prompt_starts_total{kind="resume"}',
  "hits.partial": 'hearth_request_prompt_starts_total{kind="partial"}',
  "hits.sticky": 'hearth_request_prompt_starts_total{kind="sticky"}',
  "hits.cold": 'hearth_request_prompt_starts_total{kind="cold"}',
  "tier.rows": 'hearth_cache_tier_rows{tier="{tier}"}',
  "tier.bytes": 'hearth_cache_tier_bytes{tier="{tier}"}',
  "tier.quota_bytes": 'hearth_cache_tier_quota_bytes{tier="{tier}"}',
  "model.completion_tokens": 'hearth_completion_tokens_total{model="{model}"}',
  "model.active_sequences": 'hearth_model_active_sequences{model="{model}"}',
  "model.queued_requests": 'hearth_model_queued_requests{model="{model}"}',
  "cancelled": "hearth_cancelled_generations_total",
};

const [url, key, model, shotDir] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const auth = { Authorization: "Bearer " + key };
const fail = (msg) => { throw new Error(msg); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

async function getJson(path) {
  const r = await fetch(url + path, { headers: auth });
  if (!r.ok) fail(`${path}: HTTP ${r.status}`);
  return r.json();
}

// Waits for the server's numbers to settle (asynchronous saves land after a reply).
async function quiescentStats() {
  let prev = "";
  for (let i = 0; i < 50; i++) {
    const s = JSON.stringify((await getJson("/hearth/stats")).cache);
    if (s === prev) return;
    prev = s;
    await sleep(200);
  }
  fail("the cache counters never settled");
}

async function sendTurn(page, text, index) {
  await page.type("#prompt", text);
  // Count the reply's visible updates: a streamed reply changes many times.
  await page.evaluate((i) => {
    window.__updates = 0;
    const log = document.getElementById("log");
    new MutationObserver(() => {
      const turns = log.querySelectorAll(".turn.assistant");
      if (turns.length > i && turns[i].dataset.state === "streaming") window.__updates++;
    }).observe(log, { subtree: true, characterData: true, childList: true });
  }, index);
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (i) => { const t = document.querySelectorAll(".turn.assistant")[i]; return t && t.dataset.state === "done"; },
    { timeout: 20000 }, index);
  return page.evaluate((i) => {
    const t = document.querySelectorAll(".turn.assistant")[i];
    return { text: t.querySelector(".text").textContent, hit: t.dataset.cacheHit,
             cached: Number(t.dataset.cachedTokens), prompt: Number(t.dataset.promptTokens),
             completion: Number(t.dataset.completionTokens), updates: window.__updates,
             error: t.classList.contains("error") };
  }, index);
}

async function checkChat(page) {
  await page.goto(url + "/", { waitUntil: "domcontentloaded" });
  // The server has a key: the page asks for it before it can list the models.
  await page.waitForSelector("#keybar.shown", { timeout: 10000 });
  await page.type("#key", key);
  await page.click("#keybar button[type=submit]");
  await page.waitForSelector("body[data-ready='1']", { timeout: 10000 });
  const models = await page.$$eval("#model option", (o) => o.map((x) => x.value));
  if (!models.includes(model)) fail(`model picker lists ${JSON.stringify(models)}, not ${model}`);
  await page.$eval("#max-tokens", (e) => { e.value = "24"; });

  const first = await sendTurn(page, "Once upon a time there was a little dog.", 0);
  if (first.error || !first.text) fail("first turn: no reply: " + JSON.stringify(first));
  if (first.updates < 2) fail(`first turn was not streamed (${first.updates} updates)`);
  if (first.hit !== "cold") fail(`first turn hit kind is ${first.hit}, expected cold`);
  if (!(first.completion > 0)) fail("first turn: no completion tokens in usage");
  await quiescentStats();  // the first turn's finish save is published

  const second = await sendTurn(page, "What did the dog do next?", 1);
  if (second.error || !second.text) fail("second turn: no reply: " + JSON.stringify(second));
  if (second.hit === "cold" || !second.hit) fail(`second turn not warm: ${second.hit}`);
  if (!(second.cached > 0)) fail(`second turn: cached_tokens ${second.cached}`);
  const warmPill = await page.evaluate(() =>
    [...document.querySelectorAll(".turn.assistant")[1].querySelectorAll(".pill")]
      .map((x) => x.textContent).join(" | "));
  if (!warmPill.includes("warm")) fail("no warm marker shown: " + warmPill);
  console.log(`chat: turn 1 ${first.hit} (${first.updates} updates), turn 2 ${second.hit} ` +
              `${second.cached}/${second.prompt} cached`);
  if (shotDir) await page.screenshot({ path: shotDir + "/webui-chat.png" });
}

// Stop: a new chat asks for a long reply; the page itself clicks Stop the moment the
// first text shows (no round trip through the test), the fetch is aborted, the turn is
// marked stopped, and the server cancels the generation (its connection closed).
async function checkStop(page) {
  const metricsText = async () => (await fetch(url + "/metrics", { headers: auth })).text();
  const cancelledBefore = parseMetrics(await metricsText()).get(METRIC_NAMES.cancelled) || 0;
  await page.click("#clear");
  // Long enough (the server's context is 8k) that the abort always lands mid-generation.
  await page.$eval("#max-tokens", (e) => { e.value = "8000"; });
  await page.evaluate(() => {
    const log = document.getElementById("log");
    const obs = new MutationObserver(() => {
      const t = log.querySelector(".turn.assistant .text");
      if (t && t.textContent.length > 0) {
        obs.disconnect();
        document.getElementById("stop").click();
      }
    });
    obs.observe(log, { subtree: true, characterData: true, childList: true });
  });
  await page.type("#prompt", "Tell me a very long story about a cat.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const t = document.querySelector(".turn.assistant");
    return t && (t.dataset.state === "stopped" || t.dataset.state === "done");
  }, { timeout: 20000 });
  const state = await page.$eval(".turn.assistant", (t) => t.dataset.state);
  if (state !== "stopped") fail(`Stop did not stop the reply (state ${state})`);
  if (!(await page.$eval("#send", (b) => !b.disabled))) fail("Send stays disabled after Stop");
  for (let i = 0; i < 50; i++) {
    const now = parseMetrics(await metricsText()).get(METRIC_NAMES.cancelled) || 0;
    if (now > cancelledBefore) {
      console.log("stop: reply aborted in the page, generation cancelled by the server");
      return;
    }
    await sleep(100);
  }
  fail("the server never cancelled the stopped generation");
}

async function readDashboard(page) {
  return page.evaluate(() => {
    const out = {};
    for (const e of document.querySelectorAll("[data-stat]")) out[e.dataset.stat] = Number(e.dataset.value);
    for (const e of document.querySelectorAll("#hits-legend [data-kind]")) out["hits." + e.dataset.kind] = Number(e.dataset.value);
    out.tiers = [...document.querySelectorAll("#tiers tr")].map((tr) => ({
      tier: tr.dataset.tier, rows: Number(tr.children[1].dataset.value),
      bytes: Number(tr.children[2].dataset.value), quota_bytes: Number(tr.children[3].dataset.value) }));
    out.models = [...document.querySelectorAll("#models tr")].map((tr) => ({
      id: tr.dataset.model, active_sequences: Number(tr.children[1].dataset.value),
      queued_requests: Number(tr.children[2].dataset.value),
      completion_tokens: Number(tr.children[3].dataset.value) }));
    return out;
  });
}

function compare(dash, stats, metrics) {
  const problems = [];
  const metric = (k, sub) => {
    let name = METRIC_NAMES[k];
    for (const [a, b] of Object.entries(sub || {})) name = name.replace(`{${a}}`, b);
    if (metrics.has(name)) return metrics.get(name);
    // The runtime's hit counters appear in /metrics from their first increment on.
    return k.startsWith("hits.") ? 0 : NaN;
  };
  const check = (what, shown, fromStats, fromMetrics) => {
    if (!(shown === fromStats && shown === fromMetrics))
      problems.push(`${what}: page ${shown}, /hearth/stats ${fromStats}, /metrics ${fromMetrics}`);
  };
  for (const k of ["tokens.prompt", "tokens.cached", "tokens.completion", "requests.in_flight",
                   "requests.queued", "requests.rejected_busy", "cache.evictions"]) {
    check(k, dash[k], k.split(".").reduce((o, p) => o[p], stats), metric(k, { model }));
  }
  for (const kind of ["exact", "resume", "partial", "sticky", "cold"])
    check("hits." + kind, dash["hits." + kind], stats.cache.hits[kind], metric("hits." + kind));
  if (dash.tiers.length !== stats.cache.tiers.length) problems.push("tier count differs");
  for (const t of stats.cache.tiers) {
    const shown = dash.tiers.find((x) => x.tier === t.tier) || {};
    for (const f of ["rows", "bytes", "quota_bytes"])
      check(`tier ${t.tier} ${f}`, shown[f], t[f], metric("tier." + f, { tier: t.tier }));
  }
  for (const m of stats.models) {
    const shown = dash.models.find((x) => x.id === m.id) || {};
    for (const f of ["completion_tokens", "active_sequences", "queued_requests"])
      check(`model ${m.id} ${f}`, shown[f], m[f], metric("model." + f, { model: m.id }));
  }
  return problems;
}

async function checkDashboard(page) {
  await page.goto(url + "/dashboard", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("body[data-updated]", { timeout: 10000 });
  let problems = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    await quiescentStats();
    const stats = await getJson("/hearth/stats");
    const before = await page.$eval("body", (b) => b.dataset.updated);
    await page.waitForFunction((b) => document.body.dataset.updated !== b, { timeout: 5000 }, before);
    const dash = await readDashboard(page);
    const metrics = parseMetrics(await (await fetch(url + "/metrics", { headers: auth })).text());
    problems = compare(dash, stats, metrics);
    if (problems.length === 0) {
      if (!(dash["tokens.completion"] > 0) || !(dash["hits.cold"] >= 1))
        fail("the dashboard shows no traffic: " + JSON.stringify(dash));
      const warm = dash["hits.exact"] + dash["hits.resume"] + dash["hits.partial"] + dash["hits.sticky"];
      if (!(warm >= 1)) fail("the dashboard shows no warm request");
      console.log(`dashboard: ${dash["tokens.completion"]} tokens generated, ${warm} warm, ` +
                  `${dash.tiers.length} tier(s) match /metrics`);
      if (shotDir) {
        await page.screenshot({ path: shotDir + "/webui-dashboard.png" });
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
        await page.screenshot({ path: shotDir + "/webui-dashboard-dark.png" });
      }
      return;
    }
    await sleep(300);  // something moved between the reads: read again
  }
  fail("dashboard and /metrics disagree:\n  " + problems.join("\n  "));
}

const browser = await puppeteer.launch({
  executablePath,
  headless: true,
  // Root in CI containers cannot use chromium's sandbox; /dev/shm may be tiny there.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  defaultViewport: { width: 1100, height: 760, deviceScaleFactor: 1 },
});
let rc = 0;
try {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  // No CDN, no external font: every request the pages make goes to hearth itself.
  page.on("request", (r) => {
    if (!r.url().startsWith(url)) pageErrors.push("request outside the server: " + r.url());
  });
  await checkChat(page);
  await checkStop(page);
  await checkDashboard(page);
  if (pageErrors.length) fail("page errors: " + pageErrors.join("; "));
  console.log("ALL OK");
} catch (e) {
  console.error("FAIL: " + (e && e.stack ? e.stack : e));
  rc = 1;
} finally {
  await browser.close();
}
process.exit(rc);
