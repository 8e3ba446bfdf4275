"""The report page's inline style sheet and its one small script (no fonts, no URLs)."""

CSS = """
:root { --fg:#1f2933; --muted:#616e7c; --line:#e4e7eb; --bg:#f8f9fa; --accent:#3b6ea8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  margin: 0; background: #fff; }
header { background: var(--bg); border-bottom: 1px solid var(--line); padding: 16px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 13px; }
main { padding: 8px 32px 48px; max-width: 1280px; }
section { border-bottom: 1px solid var(--line); padding: 8px 0 20px; }
h2 { font-size: 18px; margin: 18px 0 8px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
h4 { font-size: 12px; margin: 10px 0 4px; color: var(--muted); text-transform: uppercase; }
.muted, .note { color: var(--muted); font-size: 12.5px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left;
  vertical-align: top; }
th { font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.pos { color: #1d7a3a; } td.neg { color: #b42318; }
.mono, code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 12px; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.tile { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 14px; min-width: 130px; }
.tile b { display: block; font-size: 20px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 6px;
  background: #fff; max-width: 100%; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: var(--muted); max-width: 460px; }
.ok { color: #1d7a3a; font-weight: 600; } .bad { color: #b42318; font-weight: 600; }
details.row { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
details.row > summary { cursor: pointer; font-weight: 600; }
.conversation { border-left: 3px solid var(--line); padding-left: 10px; }
.msg { margin: 6px 0; padding: 6px 8px; border-radius: 6px; background: var(--bg); }
.msg.role-assistant { background: #eef4fb; }
.msg.role-system { background: #f4f1fa; }
.msg.role-tool { background: #f3f7ee; }
.msg.w0 { opacity: .45; }
.msg-head { font-size: 12px; margin-bottom: 2px; }
.role { font-weight: 700; margin-right: 8px; }
.weight, .tag, .label { font-size: 11px; border: 1px solid var(--line); border-radius: 3px;
  padding: 0 4px; margin-right: 6px; background: #fff; }
.text .prose { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { background: #1f2933; color: #f5f7fa; padding: 6px 8px; border-radius: 4px;
  overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
.tool-call { margin-top: 4px; }
ol.steps li { margin: 4px 0; }
.null { color: var(--muted); font-style: italic; }
.raw pre { max-height: 220px; overflow: auto; }
details.raw:target { outline: 2px solid var(--accent); }
"""

# Opens a linked raw line (the rejects' examples link to them).
SCRIPT = """
function openTarget() {
  var id = decodeURIComponent(location.hash.slice(1));
  var target = id && document.getElementById(id);
  if (target && target.tagName === "DETAILS") { target.open = true; }
}
window.addEventListener("hashchange", openTarget);
document.addEventListener("DOMContentLoaded", openTarget);
"""
