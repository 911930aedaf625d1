package main

import "io"

func runCheck(args []string, stdout, stderr io.Writer) int { return exitBad }
