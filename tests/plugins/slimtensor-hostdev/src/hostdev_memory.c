/* hostdev_memory.c: hostdev's device memory: host blocks behind allocation tokens that are not addresses.
 *
 * Note [hostdev tokens]
 * allocate_v2 returns a token, never an address:
 *     token = 0xdead000000000000 | slot << 32 | salt(slot, generation)      (salt: bits 12..31, non-zero)
 * It is a non-canonical address, so a core that dereferences it faults at once (and ASan names the access).
 * A handle is accepted only when it is *exactly* the live token of its slot: a token plus any offset below
 * 4 GiB keeps the slot bits but changes the salt, so it is refused, and so is a token whose memory was freed
 * (the generation changed). Offsets reach the plugin only in st_memory_ref.byte_offset and are checked
 * against the allocation's size. Every refusal names the function, says what the handle looks like (token +
 * offset, freed, foreign) and counts a bad handle on the device; the tests require that count to stay 0.
 *
 * Lifetime: free_v2 retires the token at once (any later use is a bad handle) and queues the release on its
 * stream (Note [Streams]). Each queued operation holds a use of the slots it touches; when the release runs
 * while another stream still has such an operation pending, the core freed memory that is still in use: that
 * is counted (unordered_frees) and the block is kept until the last use is gone, so the test sees a counter,
 * not corrupted memory.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostdev.h"

#define TOKEN_TAG 0xdead000000000000ull
#define TOKEN_TAG_MASK 0xffff000000000000ull
#define MAX_SLOTS 65536u
#define MAX_RECORDED 8

typedef enum slot_state { SLOT_FREE = 0, SLOT_LIVE, SLOT_RETIRED } slot_state;

typedef struct slot {
  unsigned char* block;
  uint64_t nbytes;  /* what the core asked for */
  uint64_t rounded; /* what the block holds */
  uint32_t generation;
  uint32_t salt;
  int32_t device;
  slot_state state;
  int released; /* the free operation ran; the block goes once uses reaches 0 */
  int64_t uses;
  int64_t recorded[MAX_RECORDED];
  int nrecorded;
  uint32_t next_free;
} slot;

typedef struct device_memory {
  int64_t live_bytes, peak_bytes, held_bytes, tokens, retired;
} device_memory;

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static slot* g_slots;       /* grows by doubling, guarded by g_mutex */
static uint32_t g_capacity; /* slots allocated */
static uint32_t g_used;     /* slots ever handed out (the rest of [0, g_capacity) is untouched) */
static uint32_t g_free_head = UINT32_MAX;
static device_memory g_devices[HOSTDEV_DEVICE_COUNT];

static uint32_t salt_of(uint32_t index, uint32_t generation) {
  uint32_t x = index * 0x9E3779B1u ^ (generation + 1u) * 0x85EBCA6Bu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x &= 0xfffff000u;
  return x ? x : 0x1000u;
}

static uint64_t token_of(uint32_t index, const slot* s) { return TOKEN_TAG | ((uint64_t)index << 32) | s->salt; }

static uint64_t capacity_bytes(void) {
  const char* text = getenv(HOSTDEV_CAPACITY_ENV);
  if (text && *text) {
    char* end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    if (end && *end == '\0' && value > 0) return value < (1ull << 62) ? (uint64_t)value : (1ull << 62);
  }
  return HOSTDEV_DEFAULT_CAPACITY;
}

/* Explains why `handle` is not a live token (g_mutex held); writes into buf. */
static void describe(void* handle, char* buf, size_t size) {
  const uint64_t h = (uint64_t)(uintptr_t)handle;
  if (!handle) {
    snprintf(buf, size, "the handle is NULL");
    return;
  }
  if ((h & TOKEN_TAG_MASK) != TOKEN_TAG) {
    snprintf(buf, size,
             "%p is not a hostdev allocation token (tokens look like 0xdead...; a host address or "
             "another device's pointer?)",
             handle);
    return;
  }
  const uint32_t index = (uint32_t)((h >> 32) & 0xffffu);
  if (index >= g_used) {
    snprintf(buf, size, "%p names slot %u, which hostdev never handed out", handle, index);
    return;
  }
  const slot* s = &g_slots[index];
  const uint64_t token = token_of(index, s);
  if (s->state == SLOT_LIVE && h > token) {
    snprintf(buf, size,
             "%p is the token 0x%" PRIx64 " plus 0x%" PRIx64
             " bytes: the core must pass offsets in "
             "st_memory_ref.byte_offset, never add them to a handle (Note [Device memory handles])",
             handle, token, h - token);
  } else if (s->state == SLOT_RETIRED && h == token) {
    snprintf(buf, size, "%p was freed already (free_v2): use after free", handle);
  } else {
    snprintf(buf, size, "%p is a stale or damaged token (its memory was freed, the slot reused)", handle);
  }
}

int hostdev_memory_allocate(int32_t index, uint64_t nbytes, void** token) {
  const uint64_t capacity = capacity_bytes();
  const uint64_t rounded_guess =
      nbytes <= capacity ? (nbytes + HOSTDEV_ALIGNMENT - 1) / HOSTDEV_ALIGNMENT * HOSTDEV_ALIGNMENT : 0;
  pthread_mutex_lock(&g_mutex);
  device_memory* d = &g_devices[index];
  if (nbytes > capacity || (uint64_t)d->held_bytes > capacity - rounded_guess || rounded_guess < nbytes) {
    const long long held = (long long)d->held_bytes;
    pthread_mutex_unlock(&g_mutex);
    hostdev_count(index, HD_C_FAILED_ALLOCATIONS, 1);
    return hostdev_fail(
        "hostdev allocate_v2(): out of memory on hostdev:%d: asked for %llu bytes, %lld of %llu "
        "bytes in use; free tensors or set " HOSTDEV_CAPACITY_ENV,
        (int)index, (unsigned long long)nbytes, held, (unsigned long long)capacity);
  }
  d->held_bytes += (int64_t)rounded_guess; /* reserved before the block exists, so racing callers see it */
  uint32_t i;
  if (g_free_head != UINT32_MAX) {
    i = g_free_head;
    g_free_head = g_slots[i].next_free;
  } else {
    if (g_used == g_capacity) {
      const uint32_t grown = g_capacity ? g_capacity * 2 : 256;
      slot* bigger = grown <= MAX_SLOTS ? realloc(g_slots, (size_t)grown * sizeof *g_slots) : NULL;
      if (!bigger) {
        d->held_bytes -= (int64_t)rounded_guess;
        pthread_mutex_unlock(&g_mutex);
        hostdev_count(index, HD_C_FAILED_ALLOCATIONS, 1);
        return hostdev_fail(
            "hostdev allocate_v2(): hostdev keeps at most %u live allocations and has no room "
            "for another on hostdev:%d; free tensors",
            MAX_SLOTS, (int)index);
      }
      memset(bigger + g_capacity, 0, (size_t)(grown - g_capacity) * sizeof *g_slots);
      g_slots = bigger;
      g_capacity = grown;
    }
    i = g_used++;
  }
  slot* s = &g_slots[i];
  s->state = SLOT_LIVE; /* reserved: nobody can take it; the block is set below */
  s->block = NULL;
  pthread_mutex_unlock(&g_mutex);

  unsigned char* block = aligned_alloc(HOSTDEV_ALIGNMENT, (size_t)rounded_guess);

  pthread_mutex_lock(&g_mutex);
  s = &g_slots[i]; /* the array may have moved */
  if (!block) {
    s->state = SLOT_FREE;
    s->next_free = g_free_head;
    g_free_head = i;
    d->held_bytes -= (int64_t)rounded_guess;
    pthread_mutex_unlock(&g_mutex);
    hostdev_count(index, HD_C_FAILED_ALLOCATIONS, 1);
    return hostdev_fail("hostdev allocate_v2(): the host could not provide %llu bytes for hostdev:%d",
                        (unsigned long long)nbytes, (int)index);
  }
  s->block = block;
  s->nbytes = nbytes;
  s->rounded = rounded_guess;
  s->device = index;
  s->released = 0;
  s->uses = 0;
  s->nrecorded = 0;
  s->salt = salt_of(i, s->generation);
  d->live_bytes += (int64_t)nbytes;
  if (d->live_bytes > d->peak_bytes) d->peak_bytes = d->live_bytes;
  d->tokens += 1;
  *token = (void*)(uintptr_t)token_of(i, s);
  pthread_mutex_unlock(&g_mutex);
  hostdev_count(index, HD_C_ALLOCATIONS, 1);
  return 0;
}

/* The slot of `handle` when it is exactly a live token (g_mutex held), else UINT32_MAX. */
static uint32_t lookup_live(void* handle) {
  const uint64_t h = (uint64_t)(uintptr_t)handle;
  if ((h & TOKEN_TAG_MASK) != TOKEN_TAG) return UINT32_MAX;
  const uint32_t index = (uint32_t)((h >> 32) & 0xffffu);
  if (index >= g_used) return UINT32_MAX;
  const slot* s = &g_slots[index];
  if (s->state != SLOT_LIVE || !s->block || token_of(index, s) != h) return UINT32_MAX;
  return index;
}

int64_t hostdev_memory_retire(const char* function, int32_t index, void* token, uint64_t nbytes) {
  char why[320];
  pthread_mutex_lock(&g_mutex);
  const uint32_t i = lookup_live(token);
  if (i == UINT32_MAX || g_slots[i].device != index || g_slots[i].nbytes != nbytes) {
    if (i == UINT32_MAX)
      describe(token, why, sizeof why);
    else if (g_slots[i].device != index)
      snprintf(why, sizeof why, "%p belongs to hostdev:%d, not hostdev:%d", token, (int)g_slots[i].device, (int)index);
    else
      snprintf(why, sizeof why, "%p holds %llu bytes but the call says %llu", token,
               (unsigned long long)g_slots[i].nbytes, (unsigned long long)nbytes);
    pthread_mutex_unlock(&g_mutex);
    hostdev_bad_handle(index, function, "%s", why);
    return -1;
  }
  slot* s = &g_slots[i];
  s->state = SLOT_RETIRED;
  g_devices[index].live_bytes -= (int64_t)s->nbytes;
  g_devices[index].retired += 1;
  pthread_mutex_unlock(&g_mutex);
  hostdev_count(index, HD_C_FREES, 1);
  hostdev_count(index, HD_C_PENDING_FREES, 1);
  return (int64_t)i;
}

/* Gives the block back (g_mutex held; unlocks around free()). */
static void really_release(uint32_t i) {
  slot* s = &g_slots[i];
  unsigned char* block = s->block;
  const int32_t device = s->device;
  g_devices[device].held_bytes -= (int64_t)s->rounded;
  g_devices[device].tokens -= 1;
  g_devices[device].retired -= 1;
  s->block = NULL;
  s->state = SLOT_FREE;
  s->generation += 1;
  s->next_free = g_free_head;
  g_free_head = i;
  pthread_mutex_unlock(&g_mutex);
  free(block);
  hostdev_count(device, HD_C_PENDING_FREES, -1);
  pthread_mutex_lock(&g_mutex);
}

void hostdev_memory_release(uint32_t i, int32_t free_stream_device) {
  (void)free_stream_device;
  pthread_mutex_lock(&g_mutex);
  slot* s = &g_slots[i];
  s->released = 1;
  if (s->uses == 0) {
    really_release(i);
  } else {
    /* Work queued on another stream still uses this memory: the core freed it without ordering the free
     * after that work (record_stream, or freeing on the stream that used it last). */
    hostdev_count(s->device, HD_C_UNORDERED_FREES, 1);
  }
  pthread_mutex_unlock(&g_mutex);
}

int hostdev_memory_use(const char* function, st_memory_ref ref, uint64_t nbytes, hd_span* out) {
  char why[320];
  pthread_mutex_lock(&g_mutex);
  const uint32_t i = lookup_live(ref.handle);
  if (i == UINT32_MAX) {
    describe(ref.handle, why, sizeof why);
    pthread_mutex_unlock(&g_mutex);
    return hostdev_bad_handle(ref.device_index, function, "%s", why);
  }
  slot* s = &g_slots[i];
  if (s->device != ref.device_index) {
    const int dev = s->device;
    pthread_mutex_unlock(&g_mutex);
    return hostdev_bad_handle(ref.device_index, function,
                              "%p is memory of hostdev:%d but st_memory_ref.device_index says %d", ref.handle, dev,
                              (int)ref.device_index);
  }
  if (ref.byte_offset > s->nbytes || nbytes > s->nbytes - ref.byte_offset) {
    const unsigned long long size = (unsigned long long)s->nbytes;
    pthread_mutex_unlock(&g_mutex);
    return hostdev_bad_handle(ref.device_index, function,
                              "bytes [%llu, %llu + %llu) lie outside the allocation %p of %llu bytes",
                              (unsigned long long)ref.byte_offset, (unsigned long long)ref.byte_offset,
                              (unsigned long long)nbytes, ref.handle, size);
  }
  s->uses += 1;
  out->base = s->block + ref.byte_offset;
  out->slot = i;
  out->device = s->device;
  pthread_mutex_unlock(&g_mutex);
  return 0;
}

void hostdev_memory_unuse(uint32_t i) {
  pthread_mutex_lock(&g_mutex);
  slot* s = &g_slots[i];
  s->uses -= 1;
  if (s->uses == 0 && s->released) really_release(i);
  pthread_mutex_unlock(&g_mutex);
}

int hostdev_memory_record_stream(const char* function, int32_t index, void* token, int64_t stream_id) {
  char why[320];
  pthread_mutex_lock(&g_mutex);
  const uint32_t i = lookup_live(token);
  if (i == UINT32_MAX || g_slots[i].device != index) {
    if (i == UINT32_MAX)
      describe(token, why, sizeof why);
    else
      snprintf(why, sizeof why, "%p belongs to hostdev:%d, not hostdev:%d", token, (int)g_slots[i].device, (int)index);
    pthread_mutex_unlock(&g_mutex);
    return hostdev_bad_handle(index, function, "%s", why);
  }
  slot* s = &g_slots[i];
  for (int k = 0; k < s->nrecorded; ++k) {
    if (s->recorded[k] == stream_id) {
      pthread_mutex_unlock(&g_mutex);
      return 0;
    }
  }
  if (s->nrecorded == MAX_RECORDED) {
    pthread_mutex_unlock(&g_mutex);
    return hostdev_fail("hostdev %s(): %p is already recorded on %d streams, hostdev's limit", function, token,
                        MAX_RECORDED);
  }
  s->recorded[s->nrecorded++] = stream_id;
  pthread_mutex_unlock(&g_mutex);
  return 0;
}

int hostdev_memory_recorded_streams(uint32_t i, int64_t* ids, int max) {
  pthread_mutex_lock(&g_mutex);
  const slot* s = &g_slots[i];
  int n = s->nrecorded < max ? s->nrecorded : max;
  for (int k = 0; k < n; ++k) ids[k] = s->recorded[k];
  pthread_mutex_unlock(&g_mutex);
  return n;
}

int hostdev_memory_locate(const void* ptr, int32_t* index) {
  char why[320];
  pthread_mutex_lock(&g_mutex);
  const uint32_t i = lookup_live((void*)ptr);
  if (i != UINT32_MAX) {
    *index = g_slots[i].device;
    pthread_mutex_unlock(&g_mutex);
    return 0;
  }
  describe((void*)ptr, why, sizeof why);
  pthread_mutex_unlock(&g_mutex);
  return hostdev_fail("hostdev locate_pointer(): not hostdev memory: %s", why);
}

void hostdev_memory_stats(int32_t index, int64_t* live, int64_t* peak, int64_t* held, int64_t* tokens,
                          int64_t* retired) {
  pthread_mutex_lock(&g_mutex);
  const device_memory* d = &g_devices[index];
  *live = d->live_bytes;
  *peak = d->peak_bytes;
  *held = d->held_bytes;
  *tokens = d->tokens;
  *retired = d->retired;
  pthread_mutex_unlock(&g_mutex);
}
