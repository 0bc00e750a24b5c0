/* layout.c prints the size and field offsets of the Win32 structures
 * winsandbox declares by hand, as the C compiler lays them out.
 * scripts/test-windows.sh compiles it with MinGW, runs it under Wine and
 * compares its output with winsandbox/testdata/layout.golden, which
 * TestWindowsStructLayout compares with Go's layout. */
#include <stdio.h>
#include <stddef.h>
#include <windows.h>
#include <lm.h>
#include <shellapi.h>
#include <iphlpapi.h>
#include <fwpmu.h>

#define S(t) printf("%s size %u\n", #t, (unsigned)sizeof(t))
#define F(t, f) printf("%s.%s %u\n", #t, #f, (unsigned)offsetof(t, f))

int main(void) {
	S(USER_INFO_1); F(USER_INFO_1, usri1_flags); F(USER_INFO_1, usri1_script_path);
	S(USER_INFO_2); F(USER_INFO_2, usri2_flags); F(USER_INFO_2, usri2_auth_flags); F(USER_INFO_2, usri2_logon_hours);
	F(USER_INFO_2, usri2_bad_pw_count); F(USER_INFO_2, usri2_num_logons); F(USER_INFO_2, usri2_code_page);
	S(SHELLEXECUTEINFOW); F(SHELLEXECUTEINFOW, fMask); F(SHELLEXECUTEINFOW, lpVerb); F(SHELLEXECUTEINFOW, nShow);
	F(SHELLEXECUTEINFOW, dwHotKey); F(SHELLEXECUTEINFOW, hProcess);
	S(MIB_TCPROW_OWNER_PID); F(MIB_TCPROW_OWNER_PID, dwOwningPid);
	S(FWPM_DISPLAY_DATA0); S(FWP_BYTE_BLOB); S(FWP_VALUE0); S(FWP_CONDITION_VALUE0);
	S(FWPM_FILTER_CONDITION0); F(FWPM_FILTER_CONDITION0, matchType); F(FWPM_FILTER_CONDITION0, conditionValue);
	S(FWPM_ACTION0);
	S(FWPM_FILTER0); F(FWPM_FILTER0, displayData); F(FWPM_FILTER0, flags); F(FWPM_FILTER0, providerKey);
	F(FWPM_FILTER0, providerData); F(FWPM_FILTER0, layerKey); F(FWPM_FILTER0, subLayerKey); F(FWPM_FILTER0, weight);
	F(FWPM_FILTER0, numFilterConditions); F(FWPM_FILTER0, filterCondition); F(FWPM_FILTER0, action);
	F(FWPM_FILTER0, rawContext); F(FWPM_FILTER0, reserved); F(FWPM_FILTER0, filterId); F(FWPM_FILTER0, effectiveWeight);
	S(FWPM_SESSION0); F(FWPM_SESSION0, flags); F(FWPM_SESSION0, processId); F(FWPM_SESSION0, sid); F(FWPM_SESSION0, kernelMode);
	S(FWPM_PROVIDER0); F(FWPM_PROVIDER0, providerData); F(FWPM_PROVIDER0, serviceName);
	S(FWPM_SUBLAYER0); F(FWPM_SUBLAYER0, providerKey); F(FWPM_SUBLAYER0, providerData); F(FWPM_SUBLAYER0, weight);
	S(JOBOBJECT_BASIC_ACCOUNTING_INFORMATION); F(JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, ActiveProcesses);
	S(LOCALGROUP_MEMBERS_INFO_0);
	return 0;
}
