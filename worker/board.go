package worker

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Board is the memory a concurrent run's parent shares with its worker
// processes while they drive a history by themselves (drive.go): the
// history's budget and clock, the fault loop's marks on each worker, the
// hints of reclaims held open, and each worker's record of the operations
// it ran. A worker writes a record into this memory before it sends the
// statement and finishes it when the answer comes, so a SIGKILL cannot lose
// it: the pages are the parent's too. Nothing goes over the pipe per
// operation, which is what made the parent-driven mode cost two process
// wake-ups more per operation than a plain client. (The pipe carries one
// question on the way, and only after a fault: end my old backend.)
//
// The memory is a memfd: it has no name in any file system, and it is gone
// when the parent and the last worker that mapped it are.
//
// Layout, in 64-bit words: the header (headerWords plus three words of
// hint and one claim count per event), then one slot per worker: slotWords
// of marks, failWords of a failure's text, then its records.
type Board struct {
	mem  []byte
	file *os.File
	// Path is where a worker opens the same memory (the parent's fd in
	// /proc).
	Path    string
	events  int // the most events a history may have (record and hint room)
	records int // records per slot
	slots   int
}

// Header words.
const (
	wMagic = iota
	wEvents
	wRecords
	wSlots
	wEpoch      // raised at the start and at the end of each server restart
	wRestarting // 1 while the server restarts
	wOpsLeft    // the history's operations left
	wStop       // 1 once the history must stop (a failure)
	wEnd        // the history's end, MonoNow
	wHintSeq    // the last hint's number
	headerWords
)

// Slot words, before the records.
const (
	sCount   = iota // records begun
	sTaint          // 1: a fault may have hit the worker since its last operation ended
	sArmed          // 1 while a network fault is armed on its proxy
	sBackend        // the server pid of its connection (0: none)
	sFailLen        // the length of the failure's text (0: none)
	slotWords
)

// failWords is the room for a failure's rule and detail: 1 KiB.
const failWords = 128

const boardMagic = 0x6f75746278626431 // "outbxbd1"

// NewBoard makes a board for slots workers, histories of at most events
// events and records operations per worker.
func NewBoard(slots, events, records int) (*Board, error) {
	fd, err := unix.MemfdCreate("outboxlab-board", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("board: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "outboxlab-board")
	b := &Board{file: f, events: events, records: records, slots: slots,
		Path: fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)}
	if err := f.Truncate(int64(8 * b.words())); err != nil {
		f.Close()
		return nil, fmt.Errorf("board: size: %w", err)
	}
	if err := b.mapFile(); err != nil {
		return nil, err
	}
	b.word(wMagic).Store(boardMagic)
	b.word(wEvents).Store(int64(events))
	b.word(wRecords).Store(int64(records))
	b.word(wSlots).Store(int64(slots))
	return b, nil
}

// OpenBoard maps the board at path (a worker's side).
func OpenBoard(path string) (*Board, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("board: %w", err)
	}
	b := &Board{file: f, Path: path}
	var head [headerWords * 8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("board: read header: %w", err)
	}
	word := func(i int) int64 { return *(*int64)(unsafe.Pointer(&head[8*i])) }
	if word(wMagic) != boardMagic {
		f.Close()
		return nil, fmt.Errorf("board: %s is not a board", path)
	}
	b.events, b.records, b.slots = int(word(wEvents)), int(word(wRecords)), int(word(wSlots))
	return b, b.mapFile()
}

func (b *Board) mapFile() error {
	mem, err := syscall.Mmap(int(b.file.Fd()), 0, 8*b.words(), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		b.file.Close()
		return fmt.Errorf("board: mmap: %w", err)
	}
	b.mem = mem
	return nil
}

// Close unmaps the board and closes its file.
func (b *Board) Close() {
	if b.mem != nil {
		syscall.Munmap(b.mem)
		b.mem = nil
	}
	b.file.Close()
}

func (b *Board) headerSize() int { return headerWords + 4*b.events }
func (b *Board) slotSize() int   { return slotWords + failWords + b.records*b.recordWords() }
func (b *Board) words() int      { return b.headerSize() + b.slots*b.slotSize() }

// word is the i-th word of the board. The mapping is page-aligned and
// every word 8 bytes in, so each is a valid atomic.
func (b *Board) word(i int) *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&b.mem[8*i])) }

// Epoch is raised by the fault loop at the start and the end of each
// server restart: an operation that saw it change was hit by one.
func (b *Board) Epoch() *atomic.Int64 { return b.word(wEpoch) }

// Restarting is 1 while the server restarts.
func (b *Board) Restarting() *atomic.Int64 { return b.word(wRestarting) }

// Start readies the board for a history of ops operations until end
// (MonoNow): every record, hint, count and stop mark of the last one gone.
func (b *Board) Start(ops int, end int64) {
	for i := headerWords; i < b.headerSize(); i++ {
		b.word(i).Store(0)
	}
	for s := range b.slots {
		b.Slot(s).word(sCount).Store(0)
		b.Slot(s).word(sFailLen).Store(0)
	}
	b.word(wStop).Store(0)
	b.word(wHintSeq).Store(0)
	b.word(wEnd).Store(end)
	b.word(wOpsLeft).Store(int64(ops))
}

// Stop ends the history for every actor: one of them saw a failure.
func (b *Board) Stop() { b.word(wStop).Store(1) }

// Stopped reports whether the history was stopped.
func (b *Board) Stopped() bool { return b.word(wStop).Load() != 0 }

// End is the history's end, MonoNow.
func (b *Board) End() int64 { return b.word(wEnd).Load() }

// Take spends one operation of the history's budget; false once it is
// spent, the time is up or the history was stopped.
func (b *Board) Take() bool {
	return !b.Stopped() && MonoNow() < b.End() && b.word(wOpsLeft).Add(-1) >= 0
}

// Events is the most events a history may have.
func (b *Board) Events() int { return b.events }

// Left reports whether the history has budget and time left and was not
// stopped (Take without spending).
func (b *Board) Left() bool {
	return !b.Stopped() && MonoNow() < b.End() && b.word(wOpsLeft).Load() > 0
}
