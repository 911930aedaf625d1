package sut

import (
	"embed"
	"sort"
	"strings"
)

//go:embed builtin/*.sql
var builtinFS embed.FS

// BuiltinNames lists the protocols embedded in the binary.
func BuiltinNames() []string {
	entries, _ := builtinFS.ReadDir("builtin")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
	}
	sort.Strings(names)
	return names
}

func builtinSource(name string) (string, bool) {
	if strings.ContainsAny(name, "/.") {
		return "", false
	}
	b, err := builtinFS.ReadFile("builtin/" + name + ".sql")
	return string(b), err == nil
}
