// Shared by the chat page and the dashboard: API calls with the key the user gave
// (kept in sessionStorage for this tab only), and the key prompt shown on a 401.
"use strict";

const hearth = (() => {
  const KEY = "hearth-api-key";
  const waiting = [];

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const key = sessionStorage.getItem(KEY);
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }

  // Shows the key form and resolves once the user submitted a key.
  function askForKey(message) {
    const bar = document.getElementById("keybar");
    document.getElementById("keymsg").textContent = message;
    bar.classList.add("shown");
    document.getElementById("key").focus();
    return new Promise((resolve) => waiting.push(resolve));
  }

  function setupKeyForm() {
    const form = document.getElementById("keybar");
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const input = document.getElementById("key");
      if (!input.value) return;
      sessionStorage.setItem(KEY, input.value);
      input.value = "";
      form.classList.remove("shown");
      while (waiting.length) waiting.shift()();
    });
  }

  // fetch() with the key; on 401 asks for a key and tries again.
  async function api(path, options) {
    for (;;) {
      const opts = Object.assign({}, options || {});
      opts.headers = headers(opts.headers);
      const res = await fetch(path, opts);
      if (res.status !== 401) return res;
      const had = sessionStorage.getItem(KEY);
      sessionStorage.removeItem(KEY);
      await askForKey(had ? "That API key was refused; enter the server's key."
                          : "This server needs an API key (--api-key).");
    }
  }

  async function json(path, options) {
    const res = await api(path, options);
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const msg = (body.error && body.error.message) || res.status + " " + res.statusText;
      throw new Error(msg);
    }
    return body;
  }

  function fmtBytes(n) {
    if (!n) return "0 B";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
  }

  function fmtNum(n, digits) {
    if (n === undefined || n === null || Number.isNaN(n)) return "–";
    return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits || 0 });
  }

  document.addEventListener("DOMContentLoaded", setupKeyForm);
  return { api, json, fmtBytes, fmtNum };
})();
