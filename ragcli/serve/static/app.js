// The rag serve page: plain DOM, no framework, no build step. Text from the index is only
// ever inserted as text (textContent / text nodes), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const fileUrl = (path, page) =>
  "/files/" + encodeURIComponent(path) + (page ? "#page=" + page : "");

// An id past 2**53 (a Milvus store's ids are 63-bit hashes) is more than a JavaScript number
// holds: it is kept as its exact digits, so /chunks/ID asks for the chunk that was found.
// Browsers without the reviver's source text keep the number.
const exactIds = (key, value, context) =>
  Number.isInteger(value) && !Number.isSafeInteger(value) && context ? context.source : value;
const parseJson = (text) => JSON.parse(text, exactIds);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const data = await response.text().then(parseJson).catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// -- the index line and the group choices --------------------------------------------------
async function loadStatus() {
  try {
    const status = await api("/status");
    $("index-info").textContent = `${status.documents} documents, ${status.chunks} chunks · ${status.index}`;
    for (const name of Object.keys(status.groups || {})) $("group").append(el("option", {}, name));
  } catch (error) {
    $("index-info").textContent = error.message;
  }
}

// -- search ---------------------------------------------------------------------------------
function terms(query) {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) || [])];
}

// The text with every query term wrapped in <mark>, built from text nodes only.
function highlighted(text, words) {
  const fragment = document.createDocumentFragment();
  if (!words.length) { fragment.append(text); return fragment; }
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(${escaped.join("|")})`, "giu");
  text.split(pattern).forEach((part, i) => fragment.append(i % 2 ? el("mark", {}, part) : part));
  return fragment;
}

function snippet(text, words, width = 320) {
  const lower = text.toLowerCase();
  const at = Math.min(...words.map((w) => lower.indexOf(w)).filter((i) => i >= 0), text.length);
  const start = at === text.length ? 0 : Math.max(0, at - 80);
  const cut = text.slice(start, start + width).replace(/\s+/g, " ");
  return (start > 0 ? "…" : "") + cut + (start + width < text.length ? "…" : "");
}

function filterPairs(text) {
  return text.split(/[\s,]+/).filter((pair) => pair.includes("="));
}

function sourceLink(path, page, label, viewText) {
  const link = el("a", { href: fileUrl(path, page), class: "source", target: "_blank", rel: "noopener" }, label);
  if (!/\.pdf$/i.test(path)) {
    // Not a PDF: show the indexed text in the page (the file link stays in the viewer).
    link.addEventListener("click", (event) => { event.preventDefault(); viewText(); });
  }
  return link;
}

// The form's choices a search and a question share: the mode, the group and the filters, where given.
function withFormChoices(body) {
  if ($("mode").value) body.mode = $("mode").value;
  if ($("group").value) body.group = $("group").value;
  const filters = filterPairs($("filters").value);
  if (filters.length) body.filters = filters;
  return body;
}

async function search(event) {
  event.preventDefault();
  const query = $("q").value.trim();
  const body = withFormChoices({ query });
  $("search-state").textContent = "searching…";
  $("hits").replaceChildren();
  try {
    const result = await api("/query", body);
    const words = terms(query);
    $("search-state").textContent = `${result.hits.length} hits (${result.mode})`;
    $("hits").replaceChildren(...result.hits.map((hit) => hitItem(hit, words)));
  } catch (error) {
    $("search-state").textContent = "error: " + error.message;
  }
}

// Where a hit or citation is, in the document's own unit ("slide 3", "sheet 2, rows 7-12").
const placeOf = (item) => item.place || (item.page ? `page ${item.page}` : "");
const titled = (path, item) => path + (placeOf(item) ? ` · ${placeOf(item)}` : "");

function hitItem(hit, words) {
  const where = titled(hit.path, hit);
  const open = () => showText(where, hit.text, hit.path, hit.page, words);
  return el("li", {},
    sourceLink(hit.path, hit.page, where, open),
    el("span", { class: "meta" }, ` · score ${Number(hit.score).toFixed(3)} · chunk ${hit.chunk_id}`),
    el("p", { class: "snippet" }, highlighted(snippet(hit.text, words), words)));
}

// -- the text viewer ------------------------------------------------------------------------
function showText(title, text, path, page, words) {
  $("viewer-title").textContent = title;
  $("viewer-file").href = fileUrl(path, page);
  $("viewer-text").replaceChildren(highlighted(text, words || []));
  $("viewer").showModal();
}

async function showChunk(title, path, page, chunkId) {
  try {
    const chunk = await api(`/chunks/${chunkId}`);
    showText(title, chunk.text, path, page);
  } catch (error) {
    showText(title, error.message, path, page);
  }
}

// -- ask, streamed --------------------------------------------------------------------------
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const name = (block.match(/^event: (.*)$/m) || [])[1];
      const data = (block.match(/^data: (.*)$/m) || [])[1];
      if (name) yield [name, data ? parseJson(data) : {}];
    }
  }
}

async function ask(event) {
  event.preventDefault();
  const body = withFormChoices({ question: $("question").value.trim(), stream: true });
  if ($("style").value) body.answer_style = $("style").value;
  $("answer").textContent = "";
  $("citations").replaceChildren();
  $("ask-state").textContent = "reading the sources…";
  $("ask-button").disabled = true;
  try {
    const response = await fetch("/ask", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error(data.error || response.statusText);
    }
    for await (const [name, data] of serverSentEvents(response)) {
      if (name === "token") { $("answer").append(data.text); $("ask-state").textContent = "answering…"; }
      else if (name === "answer") showAnswer(data);
      else if (name === "error") throw new Error(data.error);
    }
  } catch (error) {
    $("ask-state").textContent = "error: " + error.message;
  } finally {
    $("ask-button").disabled = false;
  }
}

function showAnswer(answer) {
  const sources = new Map(answer.sources.map((source) => [source.number, source]));
  const open = (citation) => {
    const source = sources.get(citation.number) || {};
    const title = `[${citation.number}] ` + titled(citation.path, citation);
    return () => showChunk(title, citation.path, citation.page, (source.chunk_ids || [])[0]);
  };
  const byNumber = new Map(answer.citations.map((citation) => [citation.number, citation]));
  // The answer again, its [n] markers now links to the cited source.
  const parts = answer.answer.split(/(\[\d+\])/);
  $("answer").replaceChildren(...parts.map((part) => {
    const citation = byNumber.get(Number((part.match(/^\[(\d+)\]$/) || [])[1]));
    return citation ? sourceLink(citation.path, citation.page, part, open(citation)) : part;
  }));
  $("citations").replaceChildren(...answer.citations.map((citation) => el("li", { value: citation.number },
    sourceLink(citation.path, citation.page,
      titled(citation.path, citation), open(citation)))));
  const labels = answer.support.map((item) => item.label);
  const supported = labels.filter((label) => label === "supported").length;
  $("ask-state").textContent = answer.abstained
    ? "no answer: the documents do not seem to say"
    : `answered · ${supported} of ${labels.length} sentences supported by their source`;
}

// -- keyboard -------------------------------------------------------------------------------
document.addEventListener("keydown", (event) => {
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
  if (event.key === "/" && !typing && !$("viewer").open) { event.preventDefault(); $("q").focus(); }
});

$("search-form").addEventListener("submit", search);
$("ask-form").addEventListener("submit", ask);
loadStatus();
