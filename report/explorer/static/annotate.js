// The annotation page's only script (served as a file: the CSP allows no inline script).
"use strict";
(function () {
  const body = document.querySelector("#steps tbody");
  const tpl = document.getElementById("step-row");
  function addRow(claim) {
    const tr = tpl.content.firstElementChild.cloneNode(true);
    tr.querySelector(".claim").value = claim;  // a value, never markup
    tr.querySelector(".del").addEventListener("click", () => tr.remove());
    body.appendChild(tr);
  }
  JSON.parse(document.getElementById("claims").textContent).forEach(addRow);
  document.getElementById("add-step").addEventListener("click", () => addRow(""));
  document.getElementById("save").addEventListener("click", async () => {
    const status = document.getElementById("status");
    const steps = [];
    for (const tr of body.querySelectorAll("tr")) {
      const claim = tr.querySelector(".claim").value.trim();
      const label = tr.querySelector(".label").value;
      if (!claim) continue;
      if (!label) { status.textContent = "every step needs a label"; return; }
      steps.push({claim: claim, kind: tr.querySelector(".kind").value,
                  relevant: tr.querySelector(".relevant").checked, correct: label === "correct",
                  error_type: label === "correct" ? "none" : label});
    }
    const sk = JSON.parse(document.getElementById("sample-key").textContent);
    const resp = await fetch("/api/annotations", {method: "POST",
      headers: {"Content-Type": "application/json", "X-Explorer-Token": document.body.dataset.token},
      body: JSON.stringify({annotator: document.getElementById("save").dataset.annotator, run: sk.run, key: sk.key, steps: steps})});
    const out = await resp.json();
    if (!resp.ok) { status.textContent = "not saved: " + out.error; return; }
    status.textContent = "saved (human VGR " + out.human_vgr.toFixed(1) + ")";
    location.reload();
  });
})();
