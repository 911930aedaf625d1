package main

import (
	"fmt"
	"io"
)

func runBench(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "outboxlab bench: not built yet")
	return exitBad
}
