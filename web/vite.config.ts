/// <reference types="vitest/config" />
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

/**
 * Puts the script and the style sheet into index.html, so that the build is one file and the
 * server has one page to serve, at /, beside its API (every other route it has is an API
 * operation in its OpenAPI document).
 */
function singleFile(): Plugin {
  return {
    name: 'single-file',
    apply: 'build',
    enforce: 'post',
    generateBundle(_, bundle) {
      const html = bundle['index.html'];
      if (!html || html.type !== 'asset') throw new Error('single-file: no index.html in the bundle');
      let page = String(html.source);
      for (const [name, file] of Object.entries(bundle)) {
        if (file.type === 'chunk') {
          const tag = new RegExp(`<script type="module" crossorigin src="/${name}"></script>`);
          if (!tag.test(page)) throw new Error(`single-file: index.html does not load ${name}`);
          // "</script" inside the code would end the element early.
          const code = file.code.replace(/<\/(script)/gi, '<\\/$1');
          page = page.replace(tag, () => `<script type="module">${code}</script>`);
          delete bundle[name];
        } else if (name.endsWith('.css')) {
          const tag = `<link rel="stylesheet" crossorigin href="/${name}">`;
          if (!page.includes(tag)) throw new Error(`single-file: index.html does not load ${name}`);
          page = page.replace(tag, () => `<style>${String(file.source)}</style>`);
          delete bundle[name];
        }
      }
      html.source = page;
    },
  };
}

// The build is committed (web/dist) and embedded in the Go binary, so it must be the same
// bytes on every machine: no source maps, nothing that depends on the build's folder or time.
export default defineConfig({
  plugins: [react(), singleFile()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
  test: {
    include: ['src/**/*.test.{ts,tsx}'],
    environment: 'node',
  },
});
