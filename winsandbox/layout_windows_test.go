package winsandbox

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// TestWindowsStructLayout compares the layout of every Win32 structure this
// package declares by hand with the C compiler's, recorded in
// testdata/layout.golden (scripts/test-windows.sh regenerates that file
// from testdata/wine/layout.c with MinGW and checks it is unchanged). A
// wrong offset would pass garbage to NetUserAdd, ShellExecuteEx or the
// filter engine. amd64 and arm64 lay these structures out alike.
func TestWindowsStructLayout(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("layout.golden is for 64-bit Windows, this is %s", runtime.GOARCH)
	}
	var b strings.Builder
	s := func(name string, size uintptr) { fmt.Fprintf(&b, "%s size %d\n", name, size) }
	f := func(name string, off uintptr) { fmt.Fprintf(&b, "%s %d\n", name, off) }
	var u1 userInfo1
	s("USER_INFO_1", unsafe.Sizeof(u1))
	f("USER_INFO_1.usri1_flags", unsafe.Offsetof(u1.Flags))
	f("USER_INFO_1.usri1_script_path", unsafe.Offsetof(u1.ScriptPath))
	var u2 userInfo2
	s("USER_INFO_2", unsafe.Sizeof(u2))
	f("USER_INFO_2.usri2_flags", unsafe.Offsetof(u2.Flags))
	f("USER_INFO_2.usri2_auth_flags", unsafe.Offsetof(u2.AuthFlags))
	f("USER_INFO_2.usri2_logon_hours", unsafe.Offsetof(u2.LogonHours))
	f("USER_INFO_2.usri2_bad_pw_count", unsafe.Offsetof(u2.BadPwCount))
	f("USER_INFO_2.usri2_num_logons", unsafe.Offsetof(u2.NumLogons))
	f("USER_INFO_2.usri2_code_page", unsafe.Offsetof(u2.CodePage))
	var se shellExecuteInfo
	s("SHELLEXECUTEINFOW", unsafe.Sizeof(se))
	f("SHELLEXECUTEINFOW.fMask", unsafe.Offsetof(se.Mask))
	f("SHELLEXECUTEINFOW.lpVerb", unsafe.Offsetof(se.Verb))
	f("SHELLEXECUTEINFOW.nShow", unsafe.Offsetof(se.Show))
	f("SHELLEXECUTEINFOW.dwHotKey", unsafe.Offsetof(se.HotKey))
	f("SHELLEXECUTEINFOW.hProcess", unsafe.Offsetof(se.Process))
	var tr tcpRow
	s("MIB_TCPROW_OWNER_PID", unsafe.Sizeof(tr))
	f("MIB_TCPROW_OWNER_PID.dwOwningPid", unsafe.Offsetof(tr.OwningPID))
	s("FWPM_DISPLAY_DATA0", unsafe.Sizeof(fwpmDisplayData0{}))
	s("FWP_BYTE_BLOB", unsafe.Sizeof(fwpByteBlob{}))
	s("FWP_VALUE0", unsafe.Sizeof(fwpValue0{}))
	s("FWP_CONDITION_VALUE0", unsafe.Sizeof(fwpValue0{}))
	var fc fwpmFilterCondition0
	s("FWPM_FILTER_CONDITION0", unsafe.Sizeof(fc))
	f("FWPM_FILTER_CONDITION0.matchType", unsafe.Offsetof(fc.MatchType))
	f("FWPM_FILTER_CONDITION0.conditionValue", unsafe.Offsetof(fc.Value))
	s("FWPM_ACTION0", unsafe.Sizeof(fwpmAction0{}))
	var fl fwpmFilter0
	s("FWPM_FILTER0", unsafe.Sizeof(fl))
	f("FWPM_FILTER0.displayData", unsafe.Offsetof(fl.DisplayData))
	f("FWPM_FILTER0.flags", unsafe.Offsetof(fl.Flags))
	f("FWPM_FILTER0.providerKey", unsafe.Offsetof(fl.ProviderKey))
	f("FWPM_FILTER0.providerData", unsafe.Offsetof(fl.ProviderData))
	f("FWPM_FILTER0.layerKey", unsafe.Offsetof(fl.LayerKey))
	f("FWPM_FILTER0.subLayerKey", unsafe.Offsetof(fl.SubLayerKey))
	f("FWPM_FILTER0.weight", unsafe.Offsetof(fl.Weight))
	f("FWPM_FILTER0.numFilterConditions", unsafe.Offsetof(fl.NumFilterConditions))
	f("FWPM_FILTER0.filterCondition", unsafe.Offsetof(fl.FilterCondition))
	f("FWPM_FILTER0.action", unsafe.Offsetof(fl.Action))
	f("FWPM_FILTER0.rawContext", unsafe.Offsetof(fl.ProviderContext))
	f("FWPM_FILTER0.reserved", unsafe.Offsetof(fl.Reserved))
	f("FWPM_FILTER0.filterId", unsafe.Offsetof(fl.FilterID))
	f("FWPM_FILTER0.effectiveWeight", unsafe.Offsetof(fl.EffectiveWeight))
	var ss fwpmSession0
	s("FWPM_SESSION0", unsafe.Sizeof(ss))
	f("FWPM_SESSION0.flags", unsafe.Offsetof(ss.Flags))
	f("FWPM_SESSION0.processId", unsafe.Offsetof(ss.ProcessID))
	f("FWPM_SESSION0.sid", unsafe.Offsetof(ss.SID))
	f("FWPM_SESSION0.kernelMode", unsafe.Offsetof(ss.KernelMode))
	var pr fwpmProvider0
	s("FWPM_PROVIDER0", unsafe.Sizeof(pr))
	f("FWPM_PROVIDER0.providerData", unsafe.Offsetof(pr.ProviderData))
	f("FWPM_PROVIDER0.serviceName", unsafe.Offsetof(pr.ServiceName))
	var sl fwpmSublayer0
	s("FWPM_SUBLAYER0", unsafe.Sizeof(sl))
	f("FWPM_SUBLAYER0.providerKey", unsafe.Offsetof(sl.ProviderKey))
	f("FWPM_SUBLAYER0.providerData", unsafe.Offsetof(sl.ProviderData))
	f("FWPM_SUBLAYER0.weight", unsafe.Offsetof(sl.Weight))
	var ja jobAccounting
	s("JOBOBJECT_BASIC_ACCOUNTING_INFORMATION", unsafe.Sizeof(ja))
	f("JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.ActiveProcesses", unsafe.Offsetof(ja.ActiveProcesses))
	s("LOCALGROUP_MEMBERS_INFO_0", unsafe.Sizeof(localGroupMembersInfo0{}))
	want, err := os.ReadFile("testdata/layout.golden")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.ReplaceAll(string(want), "\r\n", "\n"), b.String()); diff != "" {
		t.Errorf("layout (-C +Go):\n%s", diff)
	}
}
