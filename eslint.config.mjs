// Lints the browser extension's JavaScript (npx eslint extension). Types are tsc's job (tsconfig.json).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/**", ".venv/**"] },
  js.configs.recommended,
  {
    files: ["extension/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, ...globals.serviceworker, ...globals.webextensions },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      eqeqeq: ["error", "always"],
      "no-var": "error",
      "prefer-const": "error",
      "no-implicit-globals": "error",
      "no-shadow": "off",
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
    },
  },
  {
    // injected into pages as a classic script (chrome.scripting files / the headless capture), not a module
    files: ["extension/hidden.js"],
    languageOptions: { sourceType: "script" },
    rules: { "no-implicit-globals": "off" },
  },
];
