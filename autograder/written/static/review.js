// The graders' page. Student text only ever goes into text nodes (textContent), never markup.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const page = document.body.dataset.page;
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  }

  async function post(url, data) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
      body: JSON.stringify(data),
    });
    let reply = {};
    try { reply = await r.json(); } catch (e) { reply = {error: `the server answered ${r.status}`}; }
    if (!r.ok) throw new Error(reply.error || `the server answered ${r.status}`);
    return reply;
  }

  function say(text, kind) {
    const m = $("message");
    if (!m) return;
    m.textContent = text;
    m.className = `message ${kind}`;
    m.hidden = !text;
  }

  // -- the results folder's files: rewritten in the background after changes
  async function pollOutputs() {
    const box = $("outputs");
    if (!box) return;
    try {
      const r = await fetch("/api/status", {credentials: "same-origin"});
      const s = await r.json();
      const words = {"up to date": "files up to date", "waiting": "files will be rewritten",
                     "writing": "rewriting the files…", "failed": "rewriting the files failed"};
      box.textContent = (words[s.state] || s.state) + (s.at ? ` (${s.at})` : "");
      box.title = s.message || "";
      box.dataset.state = s.state;
      box.className = `outputs ${s.state === "failed" ? "failed" : ""}`;
    } catch (e) { /* the server stopped: nothing to show */ }
  }
  pollOutputs();
  setInterval(pollOutputs, 2000);

  if (page !== "question") return;

  const qid = document.body.dataset.question;
  let data = null;
  let index = 0;
  let picked = new Set();
  let showNames = false;

  function points(x) { return (Math.round(x * 100) / 100).toString(); }
  function signed(x) { return (x > 0 ? "+" : "") + points(x); }

  function group() { return data.groups[index]; }

  function decisionOf(g) {
    // the group's shared decision when every member has the same one
    const ds = g.members.map((m) => m.decision);
    if (ds.some((d) => !d)) return null;
    const key = (d) => JSON.stringify([[...d.items].sort(), d.adjust, d.comment]);
    return ds.every((d) => key(d) === key(ds[0])) ? ds[0] : null;
  }

  function currentScore() {
    let total = Number($("adjust").value) || 0;
    for (const item of data.rubric) if (picked.has(item.id)) total += item.points;
    return Math.min(Math.max(total, 0), data.question.points);
  }

  function showScore() { $("score").textContent = `${points(currentScore())} / ${points(data.question.points)}`; }

  function setDecision(d) {
    picked = new Set(d ? d.items : []);
    $("adjust").value = d ? d.adjust : 0;
    $("comment").value = d ? d.comment : "";
    renderRubric();
    showScore();
  }

  function renderGroups() {
    const nav = $("groups");
    nav.replaceChildren();
    data.groups.forEach((g, i) => {
      const first = g.members[0];
      const label = g.members.length > 1 ? `${first.alias} +${g.members.length - 1}` : first.alias;
      const name = showNames ? ` ${g.members.map((m) => m.name).join(", ")}` : "";
      const b = el("button", {type: "button", class: i === index ? "selected" : "",
                              "data-key": g.key, onclick: () => select(i)},
                   el("span", {}, label + name), el("span", {class: `badge ${g.status}`}, g.status));
      nav.append(b);
    });
    const sel = nav.querySelector(".selected");
    if (sel) sel.scrollIntoView({block: "nearest"});
  }

  function renderRubric() {
    const box = $("rubric");
    box.replaceChildren();
    for (const item of data.rubric) {
      const toggle = el("button", {type: "button", class: `toggle ${item.points < 0 ? "negative" : ""}`,
                                   "aria-pressed": String(picked.has(item.id)), "data-item": item.id,
                                   onclick: () => toggleItem(item.id)},
                        el("kbd", {}, item.key || "·"), el("span", {class: "pts"}, signed(item.points)),
                        el("span", {}, item.description));
      toggle.title = `feedback: ${item.feedback}`;
      const edit = el("button", {type: "button", class: "edit", onclick: () => editItem(item)}, "edit");
      box.append(el("div", {class: "item"}, toggle, edit));
    }
  }

  function renderCurrent() {
    const g = group();
    const p = data.progress;
    $("progress").textContent = `Group ${index + 1} of ${data.groups.length} · ${p.graded} of ${p.total} answers graded` +
      ` · by grader: ${Object.entries(p.by_grader).map(([k, v]) => `${k} ${v}`).join(", ") || "none yet"}`;
    const same = g.members.length > 1 ? ` · ${g.members.length} answers graded together` : "";
    $("group-head").textContent = `${g.members[0].alias}${same} (${g.status})`;
    const answers = $("answers");
    answers.replaceChildren();
    g.members.forEach((m, i) => {
      const who = el("div", {class: "who"}, el("b", {}, m.alias),
                     showNames ? el("span", {class: "name"}, m.name) : "",
                     el("span", {}, `${m.chars} characters`),
                     i > 0 && m.similarity < 100 ? el("span", {}, `${m.similarity} % alike`) : "",
                     m.decision ? el("span", {}, `graded ${m.score === null ? "" : points(m.score)} by ${m.grader}`) : "",
                     m.status === "regrade" ? el("span", {class: "badge regrade"}, "changed since graded") : "",
                     g.members.length > 1 ? el("button", {type: "button", onclick: () => split(m.student)}, "split off") : "");
      // Near-identical answers: each shown; identical ones once.
      const sameText = i > 0 && m.text === g.members[0].text;
      answers.append(el("div", {class: "answer"}, who,
                        sameText ? "" : el("div", {class: "text"}, m.text || "(no answer)")));
    });
    const sug = $("suggestion");
    sug.replaceChildren();
    if (g.suggestion) {
      const s = g.suggestion;
      sug.append(el("span", {}, `Suggested (press a): ${s.items.join(", ") || "no items"}` +
                    (s.adjust ? `, ${signed(s.adjust)} points` : "") +
                    ` from ${s.from}, ${s.similarity} % alike` +
                    (g.status === "regrade" ? " (or its previous grade)" : "")));
    }
    const prev = g.members.find((m) => m.status === "regrade");
    setDecision(decisionOf(g) || (prev ? prev.decision : null));
    renderGroups();
  }

  function select(i) {
    if (!data.groups.length) return;
    index = (i + data.groups.length) % data.groups.length;
    say("", "");
    renderCurrent();
  }

  function toggleItem(id) {
    if (picked.has(id)) picked.delete(id); else picked.add(id);
    renderRubric();
    showScore();
  }

  async function load(keepKey) {
    const r = await fetch(`/api/q/${encodeURIComponent(qid)}`, {credentials: "same-origin"});
    data = await r.json();
    let i = keepKey ? data.groups.findIndex((g) => g.key === keepKey) : -1;
    if (i < 0) i = Math.max(0, data.groups.findIndex((g) => g.status === "pending" || g.status === "regrade"));
    index = Math.min(i, Math.max(0, data.groups.length - 1));
    if (data.groups.length) renderCurrent();
    else say("No answers to this question.", "ok");
    document.body.dataset.loaded = "true";
  }

  function nextWaiting(from) {
    for (let k = 1; k <= data.groups.length; k++) {
      const i = (from + k) % data.groups.length;
      if (["pending", "regrade", "mixed"].includes(data.groups[i].status)) return i;
    }
    return from;
  }

  async function save() {
    const g = group();
    const payload = {members: g.members.map((m) => [m.student, m.version]), items: [...picked],
                     adjust: Number($("adjust").value) || 0, comment: $("comment").value};
    try {
      const reply = await post(`/api/q/${encodeURIComponent(qid)}/grade`, payload);
      const at = index;
      await load(g.key);
      const top = data.question ? data.question.points : null;
      const worth = `${points(reply.score)}${top === null ? "" : ` of ${points(top)}`} point${reply.score === 1 && top === null ? "" : "s"}`;
      say(reply.saved === 1 ? `Saved: 1 answer, ${worth}.`
                            : `Saved: ${reply.saved} answers, ${worth} each.`, "ok");
      index = nextWaiting(at);
      renderCurrent();
      document.body.dataset.saved = String(Number(document.body.dataset.saved || 0) + 1);
    } catch (e) {
      say(e.message, "error");
    }
  }

  async function split(student) {
    try {
      const g = group();
      await post(`/api/q/${encodeURIComponent(qid)}/split`, {student});
      await load(g.key);
      say("Split off: it is graded on its own now.", "ok");
    } catch (e) { say(e.message, "error"); }
  }

  function editItem(item) {
    const box = $("rubric");
    const form = el("form", {});
    const desc = el("input", {value: item.description});
    const pts = el("input", {type: "number", step: "0.25", value: item.points});
    const fb = el("input", {value: item.feedback});
    form.append(el("label", {}, "description"), desc, el("label", {}, "points"), pts,
                el("label", {}, "feedback"), fb,
                el("button", {type: "submit"}, "Save item (re-scores every answer it applies to)"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        const reply = await post(`/api/q/${encodeURIComponent(qid)}/rubric/${encodeURIComponent(item.id)}`,
                                 {description: desc.value, points: Number(pts.value), feedback: fb.value,
                                  version: item.version});
        await load(group().key);
        say(`Rubric item saved; ${reply.rescored} answer${reply.rescored === 1 ? "" : "s"} re-scored.`, "ok");
      } catch (e) { say(e.message, "error"); }
    });
    box.append(form);
    desc.focus();
  }

  async function toggleModel() {
    const box = $("model");
    if (!box.hidden) { box.hidden = true; return; }
    const r = await fetch(`/api/q/${encodeURIComponent(qid)}/model`, {credentials: "same-origin"});
    const m = await r.json();
    box.textContent = m.model_answer || "No model answer for this question.";
    box.hidden = false;
  }

  function toggleNames() { showNames = !showNames; renderCurrent(); }

  $("save").addEventListener("click", save);
  $("model-toggle").addEventListener("click", toggleModel);
  $("names-toggle").addEventListener("click", toggleNames);
  $("adjust").addEventListener("input", showScore);

  document.addEventListener("keydown", (e) => {
    const typing = ["INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (typing) {
      if (e.key === "Escape") document.activeElement.blur();
      else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !data) return;
    const item = data.rubric.find((i) => i.key && i.key === e.key);
    if (item) { toggleItem(item.id); e.preventDefault(); return; }
    const actions = {
      Enter: save, j: () => select(index + 1), ArrowDown: () => select(index + 1),
      k: () => select(index - 1), ArrowUp: () => select(index - 1),
      c: () => $("comment").focus(), p: () => $("adjust").focus(), m: toggleModel, n: toggleNames,
      a: () => { const s = group().suggestion; if (s) setDecision(s); },
    };
    if (actions[e.key]) { e.preventDefault(); actions[e.key](); }
  });

  load(null);
})();
