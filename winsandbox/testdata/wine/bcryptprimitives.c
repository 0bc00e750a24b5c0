/*
 * A stand-in bcryptprimitives.dll for running Go test binaries under Wine 8.
 *
 * Go's Windows runtime (1.22+) gets random bytes from ProcessPrng in
 * bcryptprimitives.dll, which Wine 8 does not ship, so every Go program dies
 * at start-up there. This DLL exports ProcessPrng and forwards to
 * RtlGenRandom (exported by advapi32.dll as SystemFunction036), which Wine
 * implements. It is for tests under Wine only; real Windows has the real DLL.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c
 */
#include <windows.h>

typedef BOOLEAN (WINAPI *rtl_gen_random)(PVOID buffer, ULONG length);

/* BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData); always returns TRUE on Windows. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	static rtl_gen_random gen;
	if (gen == NULL) {
		HMODULE advapi = LoadLibraryA("advapi32.dll");
		if (advapi == NULL)
			return FALSE;
		gen = (rtl_gen_random)GetProcAddress(advapi, "SystemFunction036");
		if (gen == NULL)
			return FALSE;
	}
	while (len > 0) {
		ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!gen(data, chunk))
			return FALSE;
		data += chunk;
		len -= chunk;
	}
	return TRUE;
}
