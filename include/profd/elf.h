/* elf.h: what profd reads out of ELF files (executables, shared libraries and
 * their separate debug files), with elfutils' libelf: the GNU build id that names
 * a binary and its debug file alike.
 *
 * Build ids appear as lower-case hex strings everywhere else in profd (the
 * debug file store, the API); PD_ELF_BUILD_ID_MIN..MAX bound their length in
 * bytes. */
#ifndef PROFD_ELF_H
#define PROFD_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

#define PD_ELF_BUILD_ID_MIN 2
#define PD_ELF_BUILD_ID_MAX 64
/* a build id as hex, with its NUL */
#define PD_ELF_BUILD_ID_HEX (2 * PD_ELF_BUILD_ID_MAX + 1)

/* Finds the NT_GNU_BUILD_ID note (owner "GNU") of the ELF image buf[0..len) —
 * in a SHT_NOTE section, or, for an image without section headers, a PT_NOTE
 * segment — and writes it to hex (lower case, NUL-terminated). buf is only read
 * and stays the caller's. 0 on success; PD_ECORRUPT when buf is not an ELF file
 * ("not an ELF file: ..."), PD_ENOTFOUND when it has no build-id note, PD_EINVAL
 * when the note is shorter than PD_ELF_BUILD_ID_MIN or longer than
 * PD_ELF_BUILD_ID_MAX bytes; err says which. */
int pd_elf_build_id(const uint8_t *buf, size_t len, char hex[PD_ELF_BUILD_ID_HEX],
                    struct pd_err *err);

/* Normalizes a build id given as hex (either case) into lower-case hex in out:
 * 0, or PD_EINVAL when it holds a non-hex character, an odd number of digits, or
 * fewer than PD_ELF_BUILD_ID_MIN or more than PD_ELF_BUILD_ID_MAX bytes (err
 * names the problem). */
int pd_elf_build_id_parse(const char *s, char out[PD_ELF_BUILD_ID_HEX], struct pd_err *err);

#endif
