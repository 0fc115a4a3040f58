// Go workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// goroutines, each locked to its thread, block in named functions (a
// nanosleep system call, time.Sleep) for times they measure themselves,
// printed as "name ns" lines at the end.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
)

//go:noinline
func goBlockAlpha(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}

//go:noinline
func goBlockBravo(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}

//go:noinline
func goSleepCharlie(d time.Duration) {
	time.Sleep(d)
}

func worker(name string, f func(time.Duration), d time.Duration, n int, out *int64, wg *sync.WaitGroup) {
	defer wg.Done()
	runtime.LockOSThread()
	var sum int64
	for i := 0; i < n; i++ {
		t0 := time.Now()
		f(d)
		sum += int64(time.Since(t0))
	}
	*out = sum
}

func main() {
	var wg sync.WaitGroup
	var a, b, c int64
	wg.Add(3)
	go worker("alpha", goBlockAlpha, 30*time.Millisecond, 20, &a, &wg)
	go worker("bravo", goBlockBravo, 20*time.Millisecond, 20, &b, &wg)
	go worker("charlie", goSleepCharlie, 25*time.Millisecond, 16, &c, &wg)
	wg.Wait()
	fmt.Fprintf(os.Stdout, "goBlockAlpha %d\ngoBlockBravo %d\ngoSleepCharlie %d\n", a, b, c)
}
