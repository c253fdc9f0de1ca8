/* buildid.c: the GNU build id of an ELF image in memory, read with elfutils'
 * libelf (elf_memory, gelf_getnote), and the parsing of build ids given as hex. */
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "profd/elf.h"

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static int version_ok;

static void version_init(void)
{
	version_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static void to_hex(const uint8_t *id, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * n] = '\0';
}

/* Looks through the notes in d for the GNU build id: 1 found (hex written, or
 * *rc set when its length is out of bounds), 0 not there. */
static int scan_notes(Elf_Data *d, char *hex, int *rc, struct pd_err *err)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;
	if (!d || !d->d_buf)
		return 0;
	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0) {
			if (nh.n_descsz < PD_ELF_BUILD_ID_MIN || nh.n_descsz > PD_ELF_BUILD_ID_MAX)
				*rc = pd_err_set(
				    err, PD_EINVAL,
				    "the build-id note holds %u bytes; a build id has %d "
				    "to %d",
				    (unsigned)nh.n_descsz, PD_ELF_BUILD_ID_MIN,
				    PD_ELF_BUILD_ID_MAX);
			else
				to_hex((const uint8_t *)d->d_buf + desc_off, nh.n_descsz, hex);
			return 1;
		}
		off = next;
	}
	return 0;
}

int pd_elf_build_id(const uint8_t *buf, size_t len, char hex[PD_ELF_BUILD_ID_HEX],
                    struct pd_err *err)
{
	int rc = 0, found = 0;
	Elf *e = NULL;
	pthread_once(&version_once, version_init);
	if (!version_ok)
		return pd_err_set(err, PD_EINVAL, "libelf does not support this ELF version");
	if (len < 4 || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return pd_err_set(err, PD_ECORRUPT,
		                  "not an ELF file: it does not start with \\x7fELF");
	/* libelf reads the image in place and copies what it must convert */
	e = elf_memory((char *)buf, len);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getclass(e)) {
		rc = pd_err_set(err, PD_ECORRUPT, "not an ELF file: %s", elf_errmsg(-1));
		goto out;
	}
	Elf_Scn *scn = NULL;
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		found = scan_notes(elf_getdata(scn, NULL), hex, &rc, err);
	}
	size_t nph = 0;
	if (!found && elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; !found && i < nph; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			found = scan_notes(
			    elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR),
			    hex, &rc, err);
		}
	}
	if (!found)
		rc = pd_err_set(err, PD_ENOTFOUND,
		                "the ELF file has no build-id note (NT_GNU_BUILD_ID); link it "
		                "with -Wl,--build-id");
out:
	elf_end(e);
	return rc;
}

int pd_elf_build_id_parse(const char *s, char out[PD_ELF_BUILD_ID_HEX], struct pd_err *err)
{
	size_t n = strlen(s);
	if (n % 2 || n < 2 * PD_ELF_BUILD_ID_MIN || n > 2 * PD_ELF_BUILD_ID_MAX)
		return pd_err_set(err, PD_EINVAL,
		                  "a build id is %d to %d bytes as an even number of hex digits; "
		                  "got %zu digits",
		                  PD_ELF_BUILD_ID_MIN, PD_ELF_BUILD_ID_MAX, n);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return pd_err_set(err, PD_EINVAL,
			                  "a build id is hex digits; byte %zu is not one", i + 1);
		out[i] = c;
	}
	out[n] = '\0';
	return 0;
}
