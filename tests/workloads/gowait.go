// Go workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// goroutines, each locked to its thread, block in named functions (a
// nanosleep system call, time.Sleep) for times they measure themselves,
// printed as "name ns" lines at the end.
//
// "gowait unlocked": goroutines not locked to a thread sleep (time.Sleep,
// a timer channel) in named functions, each time measured, while others
// keep the scheduler busy: their threads park in Go's scheduler and run
// other goroutines, so no function may be charged more than its goroutines
// waited.
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

//go:noinline
func goParkDelta(d time.Duration) {
	time.Sleep(d)
}

//go:noinline
func goParkEcho(d time.Duration) {
	<-time.After(d)
}

//go:noinline
func goParkFoxtrot(d time.Duration) {
	time.Sleep(d)
}

//go:noinline
func goParkGolf(d time.Duration) {
	time.Sleep(d)
}

// busy: short bursts of work and yields, so that threads go idle and wake often
func busy(stop chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	x := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 20000; i++ {
			x += i
		}
		time.Sleep(time.Millisecond)
	}
}

func unlocked() {
	var wg, bg sync.WaitGroup
	var d, e, f int64
	stop := make(chan struct{})
	bg.Add(2)
	go busy(stop, &bg)
	go busy(stop, &bg)
	run := func(f func(time.Duration), dur time.Duration, n int, out *int64) {
		defer wg.Done()
		var sum int64
		for i := 0; i < n; i++ {
			t0 := time.Now()
			f(dur)
			sum += int64(time.Since(t0))
		}
		*out = sum
	}
	wg.Add(3)
	go run(goParkDelta, 30*time.Millisecond, 15, &d)
	go run(goParkEcho, 20*time.Millisecond, 20, &e)
	go run(goParkFoxtrot, 7*time.Millisecond, 50, &f)
	wg.Wait()
	close(stop)
	bg.Wait()
	// short parks, then the program idles: the threads they parked on wait long after
	var g int64
	wg.Add(1)
	go run(goParkGolf, 2*time.Millisecond, 3, &g)
	wg.Wait()
	time.Sleep(400 * time.Millisecond)
	fmt.Fprintf(os.Stdout, "goParkDelta %d\ngoParkEcho %d\ngoParkFoxtrot %d\ngoParkGolf %d\n", d, e, f, g)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "unlocked" {
		unlocked()
		return
	}
	var wg sync.WaitGroup
	var a, b, c int64
	wg.Add(3)
	go worker("alpha", goBlockAlpha, 30*time.Millisecond, 20, &a, &wg)
	go worker("bravo", goBlockBravo, 20*time.Millisecond, 20, &b, &wg)
	go worker("charlie", goSleepCharlie, 25*time.Millisecond, 16, &c, &wg)
	wg.Wait()
	fmt.Fprintf(os.Stdout, "goBlockAlpha %d\ngoBlockBravo %d\ngoSleepCharlie %d\n", a, b, c)
}
