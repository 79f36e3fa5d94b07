package fsx

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// AppendLine appends line plus "\n" to f (opened O_APPEND) and fsyncs it.
// Call it under the lock that guards the file, and before releasing it.
func AppendLine(f *os.File, line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("append %s: line contains a newline", f.Name())
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("append %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("append %s: %w", f.Name(), err)
	}
	return nil
}

// RepairTail truncates a torn last line (bytes after the last "\n", left by
// a crash mid-append) so the next append starts on a fresh line. It returns
// how many bytes it dropped. Call it under the file's lock.
func RepairTail(f *os.File) (int64, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, nil
	}
	end, err := lastNewlineEnd(f, size)
	if err != nil {
		return 0, err
	}
	if end == size {
		return 0, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("truncate torn line of %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return size - end, nil
}

// lastNewlineEnd returns the offset just after the last "\n" in the first
// size bytes of f (0 if there is none), reading backwards in blocks.
func lastNewlineEnd(f *os.File, size int64) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	for off := size; off > 0; {
		n := int64(block)
		if off < n {
			n = off
		}
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// LastLine returns the last complete line of f (without its "\n"), ignoring
// a torn tail, without reading the whole file. nil when there is none.
func LastLine(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end, err := lastNewlineEnd(f, fi.Size())
	if err != nil || end == 0 {
		return nil, err
	}
	start, err := lastNewlineEnd(f, end-1)
	if err != nil {
		return nil, err
	}
	line := make([]byte, end-1-start)
	if _, err := f.ReadAt(line, start); err != nil && err != io.EOF {
		return nil, err
	}
	return line, nil
}

// SplitLines splits JSON Lines data into complete lines, dropping a torn
// last line (one without its "\n"); empty lines are dropped too.
func SplitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // torn tail: readers ignore it
		}
		if i > 0 {
			out = append(out, data[:i])
		}
		data = data[i+1:]
	}
	return out
}
