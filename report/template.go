package report

import (
	_ "embed"
	"html/template"
)

// pageHTML is the page's template: markup, stylesheet and script in one
// file, so that the report is one file with nothing to fetch.
//
//go:embed page.html
var pageHTML string

// pageTemplate escapes every value by its context (html/template): a rule,
// a SQL error or a protocol name holding markup renders as text.
var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"cols": func(p page) int { return 1 + len(p.Lanes) + len(p.Events) },
}).Parse(pageHTML))
