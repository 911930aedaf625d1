package proc

import (
	"os"
	"path/filepath"
	"runtime"
)

// GoCommand is the go command of the toolchain that built this binary,
// else the first on PATH ("go", for exec to look up).
func GoCommand() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
