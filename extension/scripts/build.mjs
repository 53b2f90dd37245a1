// Bundles the entry points into dist/ and copies the static files (manifest, pages).
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
await build({
  entryPoints: ["src/background.ts", "src/content.ts", "src/options.ts", "src/popup.ts", "src/panel.ts"],
  bundle: true,
  format: "esm",
  target: "chrome116",
  outdir: "dist",
  logLevel: "warning",
});
cpSync("static", "dist", { recursive: true });
console.log("built dist/");
