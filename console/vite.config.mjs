// Builds the console into dist/console. JSX goes through esbuild (Preact's automatic runtime);
// no inline scripts or styles are emitted, so the appliance can serve it under a strict CSP.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0, // no data: URLs for scripts; images stay files under /assets
    modulePreload: { polyfill: false }, // the polyfill is an inline script the CSP would refuse
    target: 'es2022',
    sourcemap: false,
  },
});
