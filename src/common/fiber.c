/*
 * Fibers on ucontext (makecontext / swapcontext), with the switches
 * announced to AddressSanitizer.  See fiber.h.
 *
 * swapcontext also saves and restores the signal mask (one system call a
 * switch); that is a few hundred nanoseconds against the milliseconds of
 * the database round trip each switch waits for.
 */
#include "common/fiber.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/err.h"

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif

#ifdef FIBER_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old, size_t *size_old);
#endif

struct fiber {
	ucontext_t context; /* the fiber's, while it is paused */
	ucontext_t resumer; /* the main context's, while the fiber runs */
	void (*fn)(void *arg);
	void *arg;
	void *data;
	char *map;   /* guard page + stack */
	char *stack; /* the stack's lowest address */
	size_t map_size;
	const int *wait_flag; /* what it waits for, or NULL */
	int wait_value;
	int started;
	int done;
	const void *main_bottom; /* the main stack, for switching back */
	size_t main_size;        /* (AddressSanitizer's bookkeeping) */
};

static struct fiber *fiber_running;

static size_t
fiber_page(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (size_t)page : 4096;
}

/* Announce a switch from the running stack to BOTTOM/SIZE; SAVE gets the
 * fake stack of the one left (NULL: it will never run again). */
static void
fiber_switch_start(void **save, const void *bottom, size_t size)
{
#ifdef FIBER_ASAN
	__sanitizer_start_switch_fiber(save, bottom, size);
#else
	(void)save;
	(void)bottom;
	(void)size;
#endif
}

static void
fiber_switch_finish(void *fake, const void **bottom, size_t *size)
{
#ifdef FIBER_ASAN
	__sanitizer_finish_switch_fiber(fake, bottom, size);
#else
	(void)fake;
	(void)bottom;
	(void)size;
#endif
}

/* Back to the resumer; DYING when the fiber will never run again. */
static void
fiber_leave(struct fiber *f, int dying)
{
	void *fake = NULL;

	fiber_switch_start(dying ? NULL : &fake, f->main_bottom, f->main_size);
	swapcontext(&f->context, &f->resumer);
	fiber_switch_finish(fake, &f->main_bottom, &f->main_size);
}

static void
fiber_trampoline(void)
{
	struct fiber *f = fiber_running;

	fiber_switch_finish(NULL, &f->main_bottom, &f->main_size);
	f->fn(f->arg);
	f->done = 1;
	fiber_leave(f, 1);
}

int
fiber_new(void (*fn)(void *arg), void *arg, void *data, struct fiber **out)
{
	size_t page = fiber_page();
	struct fiber *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (f == NULL)
		return RS_ENOMEM;
	f->fn = fn;
	f->arg = arg;
	f->data = data;
	f->map_size = FIBER_STACK_SIZE + page;
	f->map = mmap(NULL, f->map_size, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
	              -1, 0);
	if (f->map == MAP_FAILED) {
		free(f);
		return RS_ENOMEM;
	}
	/* The guard page: the stack grows down into it. */
	if (mprotect(f->map, page, PROT_NONE) != 0 ||
	    getcontext(&f->context) != 0) {
		munmap(f->map, f->map_size);
		free(f);
		return RS_ENOMEM;
	}
	f->stack = f->map + page;
	f->context.uc_stack.ss_sp = f->stack;
	f->context.uc_stack.ss_size = FIBER_STACK_SIZE;
	f->context.uc_link = NULL;
	makecontext(&f->context, fiber_trampoline, 0);
	*out = f;
	return 0;
}

void
fiber_resume(struct fiber *f)
{
	void *fake = NULL;

	if (f->done || fiber_running != NULL)
		return;
	f->wait_flag = NULL;
	f->started = 1;
	fiber_running = f;
	fiber_switch_start(&fake, f->stack, FIBER_STACK_SIZE);
	swapcontext(&f->resumer, &f->context);
	fiber_switch_finish(fake, NULL, NULL);
	fiber_running = NULL;
}

int
fiber_ready(const struct fiber *f)
{
	if (f->done)
		return 0;
	return f->wait_flag == NULL || *f->wait_flag >= f->wait_value;
}

int
fiber_done(const struct fiber *f)
{
	return f->done;
}

void
fiber_free(struct fiber *f)
{
	if (f == NULL)
		return;
	munmap(f->map, f->map_size);
	free(f);
}

struct fiber *
fiber_current(void)
{
	return fiber_running;
}

void *
fiber_data(const struct fiber *f)
{
	return f->data;
}

void
fiber_wait(const int *flag, int value)
{
	struct fiber *f = fiber_running;

	while (*flag < value) {
		f->wait_flag = flag;
		f->wait_value = value;
		fiber_leave(f, 0);
	}
}

void
fiber_yield(void)
{
	fiber_leave(fiber_running, 0);
}
