/** The overlay's stylesheet (inside its shadow root: nothing leaks to or from the page). */
export const OVERLAY_CSS = `
:host { all: initial; }
.layer { position: fixed; inset: 0; pointer-events: none; z-index: 2147483646; }
.outline { position: fixed; border: 3px solid; border-radius: 4px; box-sizing: border-box; }
.outline.best { border-style: double; border-width: 5px; }
.badge { position: fixed; font: 11px/16px system-ui, sans-serif; color: #fff; padding: 0 4px; border-radius: 3px; white-space: nowrap; }
.panel { position: fixed; width: 320px; max-height: 70vh; overflow: auto; z-index: 2147483647;
  font: 12px/1.4 system-ui, sans-serif; color: #1f2328; background: #fff; border: 1px solid #d0d7de;
  border-radius: 8px; box-shadow: 0 6px 24px rgba(0,0,0,.18); }
.head { display: flex; align-items: center; gap: 6px; padding: 6px 8px; background: #f6f8fa; cursor: move;
  border-bottom: 1px solid #d0d7de; border-radius: 8px 8px 0 0; }
.head h2 { flex: 1; margin: 0; font-size: 12px; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
button { font: inherit; border: 1px solid #d0d7de; border-radius: 5px; background: #fff; padding: 2px 8px; cursor: pointer; }
button:focus-visible, .head:focus-visible { outline: 2px solid #0969da; outline-offset: 1px; }
.body { padding: 8px; display: grid; gap: 8px; }
.panel.collapsed .body { display: none; }
h3 { margin: 0 0 4px; font-size: 11px; font-weight: 600; color: #57606a; }
ul { list-style: none; margin: 0; padding: 0; display: grid; gap: 4px; }
.bar { display: flex; height: 8px; border-radius: 4px; overflow: hidden; background: #eaeef2; }
.bar .yes { background: #1a7f37; } .bar .prog { background: #bf8700; } .bar .no { background: #cf222e; }
.bar.predicted { opacity: .55; background-image: repeating-linear-gradient(45deg, transparent 0 3px, rgba(255,255,255,.7) 3px 6px); }
.bar.predicted > div { background-image: repeating-linear-gradient(45deg, transparent 0 3px, rgba(255,255,255,.6) 3px 6px); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 10px; margin-top: 4px; font-size: 10px; color: #57606a; }
.legend .key { display: inline-flex; align-items: center; gap: 3px; }
.swatch { display: inline-block; width: 10px; height: 8px; border-radius: 2px; }
.swatch.yes { background: #1a7f37; } .swatch.prog { background: #bf8700; } .swatch.no { background: #cf222e; }
.swatch.predicted { background: repeating-linear-gradient(45deg, #8c959f 0 2px, #fff 2px 4px); }
.cand { display: grid; grid-template-columns: 44px 1fr; gap: 6px; align-items: center; }
.cand .reward { font-weight: 600; text-align: right; }
.cand.best .action::after { content: " ★ best"; color: #1a7f37; font-weight: 600; }
code { font: 11px ui-monospace, monospace; word-break: break-all; }
.tree { font: 11px ui-monospace, monospace; background: #ddf4ff; border-radius: 4px; padding: 2px 4px; margin-bottom: 6px; }
.stalled { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 4px; padding: 4px; margin-bottom: 6px; }
.feedback { white-space: pre-wrap; max-height: 120px; overflow: auto; background: #f6f8fa; padding: 4px; border-radius: 4px; }
svg { width: 100%; height: 40px; background: #f6f8fa; border-radius: 4px; }
.approval { border: 2px solid #bf8700; border-radius: 6px; padding: 6px; display: grid; gap: 6px; background: #fff8c5; }
.approval .where { margin: 0; font-weight: 600; }
.approval .headline { margin: 0; }
.cand .target { grid-column: 2; color: #57606a; font-size: 11px; }
.committed { background: #ffebe9; border: 1px solid #cf222e; border-radius: 4px; padding: 2px 4px; font: 11px ui-monospace, monospace; }
.decided { white-space: pre-wrap; font-size: 11px; margin-top: 4px; }
.decided.refused { color: #cf222e; }
.mode { font-size: 11px; color: #57606a; }
`;
