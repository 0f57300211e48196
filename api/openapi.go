package api

import (
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// The paths of the OpenAPI document and its docs page.
const (
	OpenAPIPath   = "/api/openapi.json"
	OpenAPI30Path = "/api/openapi-3.0.json"
	DocsPath      = "/api/docs"
)

const (
	tagScenarios   = "scenarios"
	tagVersions    = "versions"
	tagValidation  = "validation"
	tagComponents  = "components"
	tagTesting     = "testing"
	tagDeployments = "deployments"
	tagOperations  = "operations"
)

var apiTags = []*huma.Tag{
	{Name: tagScenarios, Description: "Scenarios: create, list, get, archive. Nothing is deleted through the API."},
	{Name: tagVersions, Description: "Versions of a scenario: history, save with optimistic concurrency, compare, export and import."},
	{Name: tagValidation, Description: "Validation of saved and unsaved graphs, of single nodes, and expression completions for the editor."},
	{Name: tagComponents, Description: "The node kinds and aggregators, for the designer's palette and forms."},
	{Name: tagTesting, Description: "Test runs of saved and unsaved graphs on sample records (a bounded replay: per node counts, each record's variables and expression values, window results, sink outputs, errors), and tests of one node on given variables."},
	{Name: tagDeployments, Description: "Deploy and cancel scenarios, send events to their HTTP sources, watch their live per-node counts, read their collected results; streams are server-sent events."},
	{Name: tagOperations, Description: "Liveness, readiness and Prometheus metrics, outside /api."},
	{Name: tagAccess, Description: "API tokens (admin only) and the current identity."},
}

const apiDescription = "The REST API of scenario-server: scenario graphs in Nussknacker's API form, " +
	"stored with every version, validated node by node.\n\n" +
	"Request bodies are JSON (Content-Type: application/json), at most the server's body limit " +
	"(10 MiB by default; test runs have their own, also 10 MiB by default, and a saved scenario's " +
	"test run also takes its records as application/x-ndjson). Every error is RFC 9457 problem details (application/problem+json) " +
	"with a stable `code`, such as scenario-not-found, version-conflict, invalid-name, " +
	"invalid-json, body-too-large, unsupported-media-type or validation-failed. Changes are " +
	"attributed to the authenticated identity (an API token's name, the OIDC user's name); " +
	"without authentication configured, to \"local\". Without credentials a route that needs a " +
	"role answers 401 unauthenticated, and with a role too low 403 forbidden."

// serveOpenAPI adds the OpenAPI document, as generated from the registered operations, at
// OpenAPIPath (OpenAPI 3.1) and OpenAPI30Path (huma's downgrade to 3.0.3, for tools that do
// not read 3.1 yet), and the docs page at DocsPath. Call it after every operation is
// registered: the documents are built once.
func serveOpenAPI(r chi.Router, hapi huma.API) error {
	doc := hapi.OpenAPI()
	if s, ok := doc.Components.Schemas.Map()["ProblemDetails"]; ok {
		if code, ok := s.Properties["code"]; ok {
			code.Enum = make([]any, len(Codes))
			for i, c := range Codes {
				code.Enum[i] = c
			}
		}
	}
	spec31, err := doc.MarshalJSON()
	if err != nil {
		return fmt.Errorf("writing the OpenAPI document: %w", err)
	}
	spec30, err := doc.Downgrade()
	if err != nil {
		return fmt.Errorf("writing the OpenAPI 3.0 document: %w", err)
	}
	serve := func(body []byte, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Write(body)
		}
	}
	r.Get(OpenAPIPath, serve(spec31, "application/json"))
	r.Get(OpenAPI30Path, serve(spec30, "application/json"))
	r.Get(DocsPath, serve([]byte(docsPage), "text/html; charset=utf-8"))
	return nil
}

// docsPage lists the operations of the OpenAPI document with plain JavaScript: it loads
// nothing from other sites, so it works without internet access.
const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>scenario-server API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;margin-top:2rem}
details{border:1px solid #ddd;border-radius:4px;margin:.4rem 0;padding:.3rem .6rem}
summary{cursor:pointer}
.m{display:inline-block;min-width:4.5rem;font-weight:bold;font-family:monospace}
.GET{color:#0a6}.POST{color:#06c}.PUT{color:#a60}.DELETE{color:#c00}
code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;max-height:30rem}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
</style></head>
<body>
<h1 id="title">scenario-server API</h1>
<p>From <a href="openapi.json">openapi.json</a> (OpenAPI 3.1; <a href="openapi-3.0.json">3.0</a>).</p>
<div id="intro"></div><div id="ops">Loading…</div>
<h2>Schemas</h2><div id="schemas"></div>
<script>
"use strict";
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}
function refName(s) { return s && s.$ref ? s.$ref.split("/").pop() : null; }
function schemaText(s) {
  if (!s) return "";
  const r = refName(s);
  if (r) return r;
  if (s.type === "array") return "array of " + schemaText(s.items);
  return s.type || "any";
}
function schemaLink(s) {
  const r = refName(s) || (s && s.type === "array" && refName(s.items));
  const text = schemaText(s);
  return r ? el("a", {href: "#schema-" + r}, text) : text;
}
fetch("openapi.json").then(r => r.json()).then(doc => {
  document.getElementById("title").textContent = doc.info.title + " " + doc.info.version;
  document.getElementById("intro").textContent = doc.info.description || "";
  const byTag = new Map((doc.tags || []).map(t => [t.name, {tag: t, ops: []}]));
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags || ["other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, {tag: {name: tag}, ops: []});
      byTag.get(tag).ops.push({path, method: method.toUpperCase(), op});
    }
  }
  const ops = document.getElementById("ops");
  ops.textContent = "";
  for (const {tag, ops: list} of byTag.values()) {
    ops.append(el("h2", {}, tag.name), el("p", {}, tag.description || ""));
    for (const {path, method, op} of list) {
      const d = el("details", {id: op.operationId || ""},
        el("summary", {}, el("span", {class: "m " + method}, method), " ", el("code", {}, path), " — ", op.summary || ""));
      if (op.description) d.append(el("p", {}, op.description));
      if (op.parameters && op.parameters.length) {
        const t = el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"), el("th", {}, "type"), el("th", {}, "description")));
        for (const p of op.parameters) {
          t.append(el("tr", {}, el("td", {}, el("code", {}, p.name), p.required ? " *" : ""), el("td", {}, p.in),
            el("td", {}, schemaText(p.schema)), el("td", {}, p.description || "")));
        }
        d.append(t);
      }
      const body = op.requestBody && op.requestBody.content;
      if (body) {
        for (const [ct, m] of Object.entries(body)) d.append(el("p", {}, "Body (" + ct + "): ", schemaLink(m.schema)));
      }
      const rs = el("ul");
      for (const [code, resp] of Object.entries(op.responses || {})) {
        const li = el("li", {}, el("b", {}, code), " " + (resp.description || ""));
        for (const [ct, m] of Object.entries(resp.content || {})) li.append(" — " + ct + ": ", schemaLink(m.schema));
        rs.append(li);
      }
      d.append(el("p", {}, "Responses:"), rs);
      ops.append(d);
    }
  }
  const schemas = document.getElementById("schemas");
  for (const [name, s] of Object.entries((doc.components || {}).schemas || {})) {
    schemas.append(el("details", {id: "schema-" + name}, el("summary", {}, el("code", {}, name), " ", s.description || ""),
      el("pre", {}, JSON.stringify(s, null, 2))));
  }
  if (location.hash) { const t = document.getElementById(location.hash.slice(1)); if (t) { t.open = true; t.scrollIntoView(); } }
}).catch(err => { document.getElementById("ops").textContent = "Could not load openapi.json: " + err; });
</script>
</body></html>
`
