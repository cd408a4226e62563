// firstfault web: copy buttons and the upload list. No framework, nothing loaded from outside.
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const code = button.closest(".code")?.querySelector("pre code, pre");
  if (!code) return;
  const text = code.innerText;
  try {
    await navigator.clipboard.writeText(text);
  } catch (error) {
    // clipboard API refused (plain http on a non-local address): select the text instead
    const range = document.createRange();
    range.selectNodeContents(code);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    document.execCommand && document.execCommand("copy");
  }
  button.textContent = "Copied";
  button.classList.add("done");
  setTimeout(() => { button.textContent = "Copy"; button.classList.remove("done"); }, 1500);
});

function listChosen() {
  const list = document.getElementById("chosen");
  if (!list) return;
  list.textContent = "";
  const names = [];
  document.querySelectorAll("#diagnose-form input[type=file]").forEach((input) => {
    for (const file of input.files) names.push((file.webkitRelativePath || file.name) + " (" + Math.ceil(file.size / 1024) + " KiB)");
  });
  names.slice(0, 20).forEach((name) => { const item = document.createElement("li"); item.textContent = name; list.appendChild(item); });
  if (names.length > 20) { const item = document.createElement("li"); item.textContent = "… and " + (names.length - 20) + " more"; list.appendChild(item); }
}
document.addEventListener("change", (event) => { if (event.target.matches("#diagnose-form input[type=file]")) listChosen(); });
document.addEventListener("submit", (event) => {
  const button = event.target.querySelector("button[type=submit]");
  if (button && event.target.action.endsWith("/diagnose")) { button.classList.add("busy"); button.textContent = "Diagnosing…"; }
});
