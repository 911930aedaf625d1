package main

// The docs checker's command check (see docs_check_test.go for the rest):
// every outboxlab command line in a code block parses with the CLI's flag
// sets.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// shellWord is a word of a shell line, or an operator ending a simple
// command (|, ||, &, &&, ;, parentheses) or starting a redirection.
type shellWord struct {
	text string
	op   bool
}

// shellWords splits a line as a shell would, without expanding anything:
// quotes and backslashes group, $(...) and `...` stay in their word, and a
// # starting a word ends the line.
func shellWords(line string) []shellWord {
	var out []shellWord
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			out = append(out, shellWord{text: cur.String()})
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return out
		case c == '\'':
			inWord = true
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				end = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\' && i+1 < len(line):
			inWord = true
			i++
			cur.WriteByte(line[i])
		case c == '$' && i+1 < len(line) && line[i+1] == '(', c == '`':
			inWord = true
			end := matchingEnd(line, i)
			cur.WriteString(line[i:end])
			i = end - 1
		case c == '<' && placeholderAt(line[i:]) > 0: // <seed>: a placeholder, not a redirection
			n := placeholderAt(line[i:])
			inWord = true
			cur.WriteString(line[i : i+n])
			i += n - 1
		case strings.IndexByte("|&;()<>", c) >= 0:
			if c == '>' && inWord && isDigits(cur.String()) { // 2>file
				cur.Reset()
				inWord = false
			}
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == c && c != ';' && c != '(' && c != ')' || c == '>' && line[i+1] == '&') {
				op += string(line[i+1])
				i++
			}
			out = append(out, shellWord{text: op, op: true})
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// matchingEnd is the index just past the $(...) or `...` starting at i.
func matchingEnd(line string, i int) int {
	if line[i] == '`' {
		if end := strings.IndexByte(line[i+1:], '`'); end >= 0 {
			return i + end + 2
		}
		return len(line)
	}
	depth := 0
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return len(line)
}

var angleHolder = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9_-]*>`)

func placeholderAt(s string) int { return len(angleHolder.FindString(s)) }

func isDigits(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// outboxlabArgs finds the outboxlab command lines among a shell line's
// simple commands, and returns the arguments of each after the program:
// "outboxlab ARGS", "./outboxlab ARGS" and "go run [-flags] ./cmd/outboxlab
// ARGS" (or the module's path, with an @version), after a "$ " prompt, a
// "reproduce:" of printed output, VAR=value assignments, or do, then,
// time... A redirection ends the arguments.
func outboxlabArgs(line string) [][]string {
	var out [][]string
	words := shellWords(line)
	for len(words) > 0 {
		end := 0
		for end < len(words) && !words[end].op {
			end++
		}
		var cmd []string
		for _, w := range words[:end] {
			cmd = append(cmd, w.text)
		}
		for end < len(words) && words[end].op && strings.ContainsAny(words[end].text, "<>") {
			end += 2 // a redirection and its file
			for end < len(words) && !words[end].op {
				end++ // what follows a redirection is not the command's
			}
		}
		if args, ok := commandArgs(cmd); ok {
			out = append(out, args)
		}
		words = words[min(end+1, len(words)):]
	}
	return out
}

var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func commandArgs(cmd []string) ([]string, bool) {
	for len(cmd) > 0 && (envAssign.MatchString(cmd[0]) || strings.Contains(" $ reproduce: do then else time exec env nohup sudo ! { } ", " "+cmd[0]+" ")) {
		cmd = cmd[1:]
	}
	switch {
	case len(cmd) == 0:
		return nil, false
	case cmd[0] == "outboxlab" || cmd[0] == "./outboxlab":
		return cmd[1:], true
	case len(cmd) > 2 && cmd[0] == "go" && cmd[1] == "run":
		i := 2
		for i < len(cmd) && strings.HasPrefix(cmd[i], "-") {
			i++
		}
		if i == len(cmd) {
			return nil, false
		}
		pkg, _, _ := strings.Cut(strings.TrimSuffix(cmd[i], "/"), "@")
		if pkg == "cmd/outboxlab" || strings.HasSuffix(pkg, "/cmd/outboxlab") {
			return cmd[i+1:], true
		}
	}
	return nil, false
}

var (
	jsonReproduce = regexp.MustCompile(`"reproduce"\s*:\s*("(?:[^"\\]|\\.)*")`)
	capsHolder    = regexp.MustCompile(`^[A-Z][A-Z0-9_/-]*$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(?:[^"\\]|\\.)*" for (?:flag )?-([^\s:]+)`)
)

// checkCommands: every outboxlab command line in a code block (fenced, or
// indented 4 spaces; a line ending in \ goes on on the next), and each
// "reproduce": "outboxlab ..." of printed JSON there, parses: parse gets
// the arguments after "outboxlab", and its error is the problem.
//
// A usage synopsis is checked as the command it describes: brackets of
// optional parts are dropped ("[--json]" is "--json", "1000[,1e6]" is
// "1000,1e6") and "..." left out; a placeholder as a flag's value (N,
// FILE, <seed>, $s) is taken as a value of the flag's type. A line whose
// subcommand is a placeholder (outboxlab COMMAND -h) is skipped, and so is
// a bare "outboxlab" (no arguments: it prints the usage) and printed
// output that names the program ("outboxlab check: --checks must be...").
func checkCommands(name, content string, parse func(args []string) error) []docProblem {
	var out []docProblem
	lines := strings.Split(content, "\n")
	kinds := classify(lines)
	for i := 0; i < len(lines); i++ {
		if kinds[i] != codeLine {
			continue
		}
		first, line := i, lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) && kinds[i+1] == codeLine {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + lines[i]
		}
		cmds := outboxlabArgs(line)
		for _, m := range jsonReproduce.FindAllStringSubmatch(line, -1) {
			if s, err := strconv.Unquote(m[1]); err == nil {
				cmds = append(cmds, outboxlabArgs(s)...)
			}
		}
		for _, args := range cmds {
			if err := parseCommand(args, parse); err != nil {
				out = append(out, docProblem{name, first + 1, fmt.Sprintf("outboxlab %s: %v", strings.Join(args, " "), err)})
			}
		}
	}
	return out
}

// parseCommand is parse's verdict on one command line's arguments, as
// checkCommands describes.
func parseCommand(args []string, parse func([]string) error) error {
	var argv []string
	for _, a := range args {
		a = strings.TrimSuffix(strings.TrimSuffix(a, "..."), "…")
		if a = strings.NewReplacer("[", "", "]", "").Replace(a); a != "" {
			argv = append(argv, a)
		}
	}
	written := slices.Clone(argv)
	if len(argv) == 0 || strings.HasSuffix(argv[0], ":") || capsHolder.MatchString(argv[0]) {
		return nil
	}
	// A placeholder is first taken as is (a string flag's value), then as
	// each of these in turn while its flag says it is not one of its values.
	values := []string{"1", "1s", "1/2"}
	tried := map[int]int{}
	asWritten := map[int]error{} // the error a placeholder gave as written
	for {
		err := parse(argv)
		if err == nil {
			return nil
		}
		m := invalidValue.FindStringSubmatch(err.Error())
		if m == nil {
			return err
		}
		i := placeholderOf(written, m[1])
		switch {
		case i < 0:
			return err
		case tried[i] == 0:
			asWritten[i] = err
		case tried[i] == len(values):
			return asWritten[i]
		}
		if f, _, ok := strings.Cut(argv[i], "="); ok && strings.HasPrefix(f, "-") {
			argv[i] = f + "=" + values[tried[i]]
		} else {
			argv[i] = values[tried[i]]
		}
		tried[i]++
	}
}

// placeholderOf is the index of flag's value in a command line as the
// docs wrote it, when that is a placeholder; -1 otherwise.
func placeholderOf(written []string, flag string) int {
	for i, a := range written {
		if f, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(f, "-") {
			if strings.TrimLeft(f, "-") == flag && isPlaceholder(v) {
				return i
			}
			continue
		}
		if i > 0 && strings.HasPrefix(written[i-1], "-") && strings.TrimLeft(written[i-1], "-") == flag && isPlaceholder(a) {
			return i
		}
	}
	return -1
}

func isPlaceholder(v string) bool {
	return capsHolder.MatchString(v) || strings.ContainsAny(v, "$`") || angleHolder.MatchString(v)
}

// parseWithCLI parses a command line with the CLI's own flag sets, through
// run with parseOnly set (the caller sets it): nil, or the first line the
// command printed on stderr (the flag package's error, or "unknown
// command").
func parseWithCLI(args []string) error {
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitPass {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return errors.New(msg)
	}
	return nil
}
