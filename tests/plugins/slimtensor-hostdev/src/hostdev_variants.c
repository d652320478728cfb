/* hostdev_variants.c: st_plugin_init for the real hostdev device and for deliberately broken plugins. */
#include <stddef.h>
#include <string.h>

#include "hostdev.h"

/* Note [hostdev variants]
 * Besides the real device, the package carries plugins that a core must refuse without crashing:
 * one built for ABI major 99, one for a newer minor than any core knows, one whose table is truncated
 * (struct_size ends before last_error), and one whose init fails. Each broken table names a device of
 * its own ("hostdev_bad_major", ...) so that a core that wrongly accepted it would not collide with, or
 * hide, the real hostdev. Tables live in static storage: the ABI says they stay valid until exit. */
static st_device_table g_tables[HOSTDEV_VARIANT_COUNT];

/* The plugin checks the core too: it must at least know our major and be large enough to read. */
static int check_core(const st_core_table* core) {
  if (!core) return hostdev_fail("hostdev st_plugin_init(): the core table is NULL");
  if (core->abi_major != ST_PLUGIN_ABI_MAJOR) {
    return hostdev_fail("hostdev st_plugin_init(): slimtensor-core speaks plugin ABI %u.%u, hostdev was built "
                        "for %d.%d; rebuild slimtensor-hostdev against the installed slimtensor-core",
                        core->abi_major, core->abi_minor, ST_PLUGIN_ABI_MAJOR, ST_PLUGIN_ABI_MINOR);
  }
  if (core->struct_size < offsetof(st_core_table, note_device_memory) + sizeof core->note_device_memory) {
    return hostdev_fail("hostdev st_plugin_init(): the core table is too small (%u bytes)", core->struct_size);
  }
  return 0;
}

static int init_variant(hostdev_variant variant, const st_core_table* core, const st_device_table** out) {
  if (!out) return hostdev_fail("hostdev st_plugin_init(): out must not be NULL");
  *out = NULL;
  if (check_core(core)) return 1;
  st_device_table* table = &g_tables[variant];
  if (hostdev_make_table(core, table)) return 1;
  switch (variant) {
    case HOSTDEV_OK: break;
    case HOSTDEV_BAD_MAJOR:
      table->abi_major = 99;
      table->name = "hostdev_bad_major";
      break;
    case HOSTDEV_BAD_MINOR:
      table->abi_minor = (uint16_t)(core->abi_minor + 1);
      table->name = "hostdev_bad_minor";
      break;
    case HOSTDEV_SMALL_STRUCT:
      table->struct_size = (uint32_t)offsetof(st_device_table, last_error);
      table->name = "hostdev_small_struct";
      break;
    case HOSTDEV_INIT_FAILS:
      return hostdev_fail("hostdev st_plugin_init(): this variant always fails (a test of the core's refusal)");
    default:
      return hostdev_fail("hostdev st_plugin_init(): unknown variant %d", (int)variant);
  }
  *out = table;
  return 0;
}

static int init_ok(const st_core_table* c, const st_device_table** o) { return init_variant(HOSTDEV_OK, c, o); }
static int init_bad_major(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_BAD_MAJOR, c, o);
}
static int init_bad_minor(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_BAD_MINOR, c, o);
}
static int init_small_struct(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_SMALL_STRUCT, c, o);
}
static int init_fails(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_INIT_FAILS, c, o);
}

st_plugin_init_fn hostdev_init_function(hostdev_variant variant) {
  switch (variant) {
    case HOSTDEV_OK: return init_ok;
    case HOSTDEV_BAD_MAJOR: return init_bad_major;
    case HOSTDEV_BAD_MINOR: return init_bad_minor;
    case HOSTDEV_SMALL_STRUCT: return init_small_struct;
    case HOSTDEV_INIT_FAILS: return init_fails;
    default: return NULL;
  }
}

const char* hostdev_variant_name(hostdev_variant variant) {
  static const char* const names[HOSTDEV_VARIANT_COUNT] = {"ok", "bad_major", "bad_minor", "small_struct",
                                                            "init_fails"};
  return (variant >= 0 && variant < HOSTDEV_VARIANT_COUNT) ? names[variant] : NULL;
}
