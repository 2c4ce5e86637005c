// The registry page: reads ./registry.json, renders a card per model, filters them from the
// URL's query string so a filtered view can be shared. No framework, no network beyond this folder.
"use strict";

// the domains with a colour of their own (style.css), in chip order; any other a plugin brings
// follows them, alphabetically, in the ink colour
const DOMAINS = ["vision", "nlp", "speech", "multimodal", "gnn"];
const FILTERS = { q: "", domain: "", task: "", plugin: "", sort: "name" };

const $ = (id) => document.getElementById(id);

// el("a", {href: url}, "text", child) — every string becomes a text node, so data is never HTML.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

// 86567656 -> "86.6M", the way `python -m garden list` prints sizes.
function human(n, units = [["B", 1e9], ["M", 1e6], ["K", 1e3]]) {
  if (n === null || n === undefined) return "–";
  for (const [unit, size] of units) if (n >= size) return `${(n / size).toFixed(1)}${unit}`;
  return String(n);
}
const bytes = (n) => (n == null ? "–" : n < 1e3 ? `${n} B` : human(n, [[" GB", 1e9], [" MB", 1e6], [" kB", 1e3]]));
const flops = (n) => (n == null ? "–" : human(n, [[" TFLOPs", 1e12], [" GFLOPs", 1e9], [" MFLOPs", 1e6], [" kFLOPs", 1e3]]));

function defaultVariant(model) {
  return model.variants.find((v) => v.name === model.default) || model.variants[0];
}
const sizeOf = (model) => defaultVariant(model).params ?? 0;

// Every word must appear somewhere in these fields, as `python -m garden search` matches.
function haystack(model) {
  return [model.name, model.family, model.domain, model.description, ...model.tasks, model.paper || "",
    ...model.variants.map((v) => `${v.name} ${v.hub_id || ""}`)].join(" ").toLowerCase();
}

function matches(model, state) {
  const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
  return (!state.domain || model.domain === state.domain)
    && (!state.task || model.tasks.includes(state.task))
    && (!state.plugin || model.plugin === state.plugin)
    && words.every((word) => model._haystack.includes(word));
}

function sorted(models, sort) {
  const byName = (a, b) => a.name.localeCompare(b.name);
  const bySize = (a, b) => sizeOf(a) - sizeOf(b) || byName(a, b);
  const order = { name: byName, params: bySize, "-params": (a, b) => bySize(b, a) }[sort] || byName;
  return [...models].sort(order);
}

// ---- URL <-> filter state -------------------------------------------------------------------

function readState() {
  const params = new URLSearchParams(location.search);
  const state = { ...FILTERS };
  for (const key of Object.keys(FILTERS)) if (params.get(key)) state[key] = params.get(key);
  return state;
}

function writeState(state) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(state)) if (value && value !== FILTERS[key]) params.set(key, value);
  const query = params.toString();
  const url = `${location.pathname}${query ? `?${query}` : ""}${location.hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, "", url);
}

function formState() {
  const form = $("filters");
  return {
    q: $("q").value.trim(),
    domain: form.elements.domain ? form.elements.domain.value : "",
    task: $("task").value,
    plugin: $("plugin").value,
    sort: $("sort").value,
  };
}

function showState(state) {
  $("q").value = state.q;
  for (const radio of document.querySelectorAll("input[name=domain]")) radio.checked = radio.value === state.domain;
  for (const key of ["task", "plugin", "sort"]) {
    const select = $(key);
    select.value = state[key];
    if (select.value !== state[key]) select.value = FILTERS[key];
  }
}

// ---- rendering ------------------------------------------------------------------------------

function fillControls(models) {
  const present = new Set(models.map((m) => m.domain));
  const domains = [...DOMAINS.filter((d) => present.has(d)), ...[...present].filter((d) => !DOMAINS.includes(d)).sort()];
  const chip = (value, label, count) => el("label", { class: `chip ${value ? `domain-${value}` : ""}` },
    el("input", { type: "radio", name: "domain", value }), el("span", {}, label, el("small", {}, String(count))));
  $("domains").replaceChildren(chip("", "all", models.length),
    ...domains.map((d) => chip(d, d, models.filter((m) => m.domain === d).length)));
  const options = (values) => [...new Set(values)].sort().map((v) => el("option", { value: v }, v));
  $("task").append(...options(models.flatMap((m) => m.tasks)));
  $("plugin").append(...options(models.map((m) => m.plugin).filter(Boolean)));
}

// What each IPU holds comes from registry.json (stage_summaries), written by garden's own planner rules.
function layoutBar(ipus, layers, summaries) {
  const stages = layers.map((count, i) => {
    const title = summaries[i];
    return el("li", { class: "stage", style: `flex-grow:${Math.max(count, 0.6)}`, title, "aria-label": title },
      String(count));
  });
  return el("div", { class: "layout" },
    el("span", { class: "layout-ipus" }, `${ipus} IPU${ipus === "1" ? "" : "s"}`),
    el("ol", { class: "stages" }, stages));
}

// One row of sizes per variant, then a full-width row naming its weights, so Hub ids never wrap.
function variantsTable(model) {
  const chosen = defaultVariant(model).name;
  const rows = model.variants.flatMap((v) => [
    el("tr", { class: "sizes" },
      el("th", { scope: "row" }, v.name, v.name === chosen ? el("span", { class: "default" }, "default") : null),
      el("td", { class: "num" }, human(v.params)),
      el("td", { class: "num", title: v.flops_input ? `one forward pass on ${v.flops_input}` : "" }, flops(v.flops)),
      el("td", { class: "num" }, bytes(v.file_size))),
    el("tr", { class: "weights" }, el("td", { colspan: 4 }, v.hub_id
      ? [el("a", { href: `https://huggingface.co/${v.hub_id}`, rel: "noopener", target: "_blank" }, v.hub_id),
        v.revision ? el("code", { class: "rev", title: "pinned revision" }, `@${v.revision.slice(0, 7)}`) : null]
      : el("span", { class: "muted" }, "built from its config, random weights"))),
  ]);
  return el("div", { class: "scroll" }, el("table", { class: "variants" },
    el("caption", { class: "sr-only" }, `Variants of ${model.name}`),
    el("thead", {}, el("tr", {}, ["variant", "params", "FLOPs/sample", "file"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows)));
}

function resultsList(model) {
  if (!model.results.length) return null;
  return el("section", { class: "block" }, el("h3", {}, "Results"),
    el("ul", { class: "results" }, model.results.map((r) => el("li", {},
      el("strong", {}, Object.entries(r.metrics).map(([k, v]) => `${k} ${v}`).join(" · ")),
      ` on ${r.dataset} (${r.task}${r.variant ? `, ${r.variant}` : ""})`,
      r.baseline ? el("span", {}, `; baseline ${r.baseline.metric} ${r.baseline.value} (${r.baseline.name})`) : null,
      r.note ? el("span", {}, `; ${r.note}`) : null,
      r.throughput ? el("span", { class: "muted" }, ` — ${r.throughput} samples/s${r.hardware ? ` on ${r.hardware}` : ""}`) : null))));
}

// notebooks.json (served by `garden registry serve`): each entry's tutorial notebook and, where
// GARDEN_NOTEBOOK_URL is set, the link that opens it on a notebook host. Missing: no links.
let NOTEBOOKS = { open_label: null, notebooks: {} };

function notebookLinks(model, task) {
  const found = (NOTEBOOKS.notebooks[model.name] || {})[task];
  if (!found) return null;
  return el("span", { class: "notebook" },
    el("a", { href: found.path, class: "nb", "aria-label": `Notebook for ${model.name} ${task}` }, "Notebook"),
    found.open ? el("a", { href: found.open, class: "open", rel: "noopener", target: "_blank",
      "aria-label": `Open the ${model.name} ${task} notebook in ${NOTEBOOKS.open_label}` },
    `Open in ${NOTEBOOKS.open_label}`) : null);
}

function commandRow(model, task, command) {
  return el("li", { class: "command" },
    el("span", { class: "task" }, task),
    // One unbreakable span per word, so a line wraps between words, never inside task=node-classify.
    el("code", {}, command.split(" ").flatMap((word, i) => [i ? " " : null, el("span", { class: "word" }, word)])),
    el("button", { type: "button", class: "copy", dataset: { command },
      "aria-label": `Copy the command that runs ${model.name} ${task}` }, "Copy"),
    notebookLinks(model, task));
}

function card(model) {
  const id = `model-${model.name}`;
  const hub = model.variants.find((v) => v.hub_id);
  const layouts = Object.entries(model.layouts).sort((a, b) => a[0] - b[0]);
  return el("li", { class: "card", dataset: { name: model.name, domain: model.domain } },
    el("article", { "aria-labelledby": id },
      el("header", { class: "card-head" },
        el("h2", { id }, model.name),
        el("span", { class: `badge domain-${model.domain}` }, model.domain)),
      el("p", { class: "meta" }, [`family ${model.family}`, model.plugin ? `${model.plugin} ${model.plugin_version || ""}` : null,
        model.license ? `license ${model.license}` : null].filter(Boolean).join(" · ")),
      el("p", { class: "desc" }, model.description),
      el("ul", { class: "tags", "aria-label": "tasks" }, model.tasks.map((t) => el("li", {}, t))),
      el("section", { class: "block" }, el("h3", {}, "Variants"), variantsTable(model)),
      el("section", { class: "block" }, el("h3", {}, "Stage layouts"),
        layouts.length ? layouts.map(([ipus, layers]) => layoutBar(ipus, layers, model.stage_summaries[ipus]))
          : el("p", { class: "muted" }, "No published layout; ipu.layers_per_ipu=[-1] plans one at run time.")),
      resultsList(model),
      el("section", { class: "block" }, el("h3", {}, "Run"),
        el("ul", { class: "commands" }, Object.entries(model.commands).map(([task, command]) => commandRow(model, task, command)))),
      el("p", { class: "links" },
        model.paper_url ? el("a", { href: model.paper_url, rel: "noopener", target: "_blank", title: model.paper || "" }, "Paper") : null,
        hub ? el("a", { href: `https://huggingface.co/${hub.hub_id}`, rel: "noopener", target: "_blank" }, "Hugging Face Hub") : null)));
}

function render(models, state) {
  const shown = sorted(models.filter((m) => matches(m, state)), state.sort);
  const cards = $("cards");
  const byName = new Map([...cards.children].map((node) => [node.dataset.name, node]));
  cards.replaceChildren(...shown.map((m) => byName.get(m.name) || card(m)));
  $("count").textContent = `${shown.length} of ${models.length} model${models.length === 1 ? "" : "s"}`;
  $("empty").hidden = shown.length > 0;
}

// ---- copy -----------------------------------------------------------------------------------

// The clipboard API needs a secure context (127.0.0.1 is one); elsewhere fall back to execCommand.
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (err) { /* denied: try the fallback */ }
  const area = el("textarea", { readonly: true, class: "sr-only" });
  area.value = text;
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  return copied;
}

async function onCopy(button) {
  const text = button.dataset.command;
  const copied = await copyText(text);
  document.body.dataset.lastCopied = text; // what the last copy wrote, for people and tests alike
  button.textContent = copied ? "Copied" : "Press Ctrl+C";
  if (!copied) getSelection().selectAllChildren(button.previousElementSibling);
  $("status").textContent = copied ? `Copied: ${text}` : "Copy blocked by the browser; the command is selected";
  $("status").classList.add("visible");
  clearTimeout(onCopy.timer);
  onCopy.timer = setTimeout(() => {
    button.textContent = "Copy";
    $("status").classList.remove("visible");
  }, 1800);
}

// ---- start ----------------------------------------------------------------------------------

async function start() {
  let registry;
  try {
    const response = await fetch("registry.json", { cache: "no-store" });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    registry = await response.json();
  } catch (err) {
    $("count").textContent = "";
    $("problem").textContent = `Could not load registry.json (${err.message}). Run: python -m garden registry serve`;
    $("problem").hidden = false;
    return;
  }
  try {
    const response = await fetch("notebooks.json", { cache: "no-store" });
    if (response.ok) NOTEBOOKS = await response.json();
  } catch (err) { /* a static copy of the page without notebooks: no links */ }
  const models = registry.models.map((m) => ({ ...m, _haystack: haystack(m) }));
  fillControls(models);
  const update = (state) => { writeState(state); render(models, state); };
  showState(readState());
  render(models, formState());

  const form = $("filters");
  form.addEventListener("input", () => update(formState()));
  form.addEventListener("change", () => update(formState()));
  form.addEventListener("submit", (event) => event.preventDefault());
  for (const button of document.querySelectorAll("#clear, [data-clear]")) {
    button.addEventListener("click", () => { showState(FILTERS); update(formState()); $("q").focus(); });
  }
  window.addEventListener("popstate", () => { showState(readState()); render(models, formState()); });
  $("cards").addEventListener("click", (event) => {
    const button = event.target.closest("button.copy");
    if (button) onCopy(button);
  });
}

start();
