package winsandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows Filtering Platform half of WFPFilter: persistent filters in
// agentbox's own provider and sublayer, each blocking one of the offline
// user's kinds of traffic (ALE_USER_ID = the user), added and removed in one
// transaction. Structures are those of fwpmtypes.h and fwptypes.h; their
// layout is checked against the C compiler's (TestWindowsStructLayout).

type fwpmDisplayData0 struct {
	Name        *uint16
	Description *uint16
}

type fwpByteBlob struct {
	Size uint32
	Data *byte
}

// fwpValue0 is FWP_VALUE0 and FWP_CONDITION_VALUE0: a type and an 8-byte
// union (a value or a pointer).
type fwpValue0 struct {
	Type  uint32
	Value uintptr
}

type fwpmFilterCondition0 struct {
	FieldKey  windows.GUID
	MatchType uint32
	Value     fwpValue0
}

type fwpmAction0 struct {
	Type       uint32
	FilterType windows.GUID
}

type fwpmFilter0 struct {
	FilterKey           windows.GUID
	DisplayData         fwpmDisplayData0
	Flags               uint32
	ProviderKey         *windows.GUID
	ProviderData        fwpByteBlob
	LayerKey            windows.GUID
	SubLayerKey         windows.GUID
	Weight              fwpValue0
	NumFilterConditions uint32
	FilterCondition     *fwpmFilterCondition0
	Action              fwpmAction0
	ProviderContext     [2]uint64 // union { UINT64 rawContext; GUID providerContextKey; }
	Reserved            *windows.GUID
	FilterID            uint64
	EffectiveWeight     fwpValue0
}

type fwpmSession0 struct {
	SessionKey           windows.GUID
	DisplayData          fwpmDisplayData0
	Flags                uint32
	TxnWaitTimeoutInMSec uint32
	ProcessID            uint32
	SID                  *windows.SID
	Username             *uint16
	KernelMode           int32
}

type fwpmProvider0 struct {
	ProviderKey  windows.GUID
	DisplayData  fwpmDisplayData0
	Flags        uint32
	ProviderData fwpByteBlob
	ServiceName  *uint16
}

type fwpmSublayer0 struct {
	SubLayerKey  windows.GUID
	DisplayData  fwpmDisplayData0
	Flags        uint32
	ProviderKey  *windows.GUID
	ProviderData fwpByteBlob
	Weight       uint16
}

// WFP constants (fwptypes.h, fwpmtypes.h, fwpmu.h, winerror.h, rpcdce.h).
const (
	fwpUint8                  = 1
	fwpUint16                 = 2
	fwpUint32                 = 3
	fwpSecurityDescriptorType = 14
	fwpMatchEqual             = 0
	fwpActionBlock            = 0x1001 // FWP_ACTION_BLOCK | FWP_ACTION_FLAG_TERMINATING
	fwpActionPermit           = 0x1002 // FWP_ACTION_PERMIT | FWP_ACTION_FLAG_TERMINATING
	fwpmFlagPersistent        = 1      // for providers, sublayers and filters alike
	fwpEFilterNotFound        = 0x80320003
	fwpENotFound              = 0x80320008
	fwpEAlreadyExists         = 0x80320009
	fwpEInUse                 = 0x8032000A
	rpcCAuthnDefault          = 0xffffffff
	infinite                  = 0xffffffff
)

// The layers and condition fields agentbox's filters use (fwpmu.h).
var (
	layerALEAuthConnectV4     = mustGUID("{c38d57d1-05a7-4c33-904f-7fbceee60e82}")
	layerALEAuthConnectV6     = mustGUID("{4a72393b-319f-44bc-84c3-ba54dcb3b6b4}")
	layerALEResourceAssignV4  = mustGUID("{1247d66d-0b60-4a15-8d44-7155d0f53a0c}")
	layerALEResourceAssignV6  = mustGUID("{55a650e1-5f0a-4eca-a653-88f53b26aa8c}")
	layerALEAuthRecvAcceptV4  = mustGUID("{e1cd9fe7-f4b5-4273-96c0-592e487b8650}")
	layerALEAuthRecvAcceptV6  = mustGUID("{a3b42c97-9f04-4672-b87e-cee9c483257f}")
	conditionIPRemoteAddress  = mustGUID("{b235ae9a-1d64-49b8-a44c-5ff3d9095045}")
	conditionALEUserID        = mustGUID("{af043a0a-b34d-4f86-979c-c90371af6e66}")
	conditionIPProtocol       = mustGUID("{3971ef2b-623e-4f9a-8cb1-6e79b806b9a7}")
	conditionIPRemotePort     = mustGUID("{c35a604d-d22b-4e1a-91b4-68f674ee674b}")
	errWFPNotFound            = errors.New("not found")
	wfpIgnoreOnDelete         = []uint32{fwpEFilterNotFound, fwpENotFound}
	wfpIgnoreOnAddContainer   = []uint32{fwpEAlreadyExists}
	wfpIgnoreOnDeleteInUseToo = []uint32{fwpEFilterNotFound, fwpENotFound, fwpEInUse}
)

func mustGUID(s string) windows.GUID {
	g, err := windows.GUIDFromString(s)
	if err != nil {
		panic(err)
	}
	return g
}

// wfpCall calls a Fwpm function and turns its DWORD result into an error,
// nil for success or for one of the results ok lists.
func wfpCall(p *windows.LazyProc, ok []uint32, args ...uintptr) error {
	r, _, _ := p.Call(args...)
	if r == 0 {
		return nil
	}
	for _, o := range ok {
		if uint32(r) == o {
			return nil
		}
	}
	if uint32(r) == fwpEFilterNotFound || uint32(r) == fwpENotFound {
		return fmt.Errorf("%s: %w", p.Name, errWFPNotFound)
	}
	return fmt.Errorf("%s: error %#x", p.Name, uint32(r))
}

// withWFP opens the filter engine, runs f in one transaction and commits
// it (or aborts it when f fails).
func withWFP(f func(engine uintptr) error) error { return withWFPTxn(0, f) }

// fwpmTxnReadOnly is FWPM_TXN_READ_ONLY.
const fwpmTxnReadOnly = 1

// withWFPTxn is withWFP with the transaction's flags.
func withWFPTxn(flags uint32, f func(engine uintptr) error) error {
	if err := modfwpuclnt.Load(); err != nil {
		return fmt.Errorf("the Windows Filtering Platform is not available: %w", err)
	}
	name, _ := windows.UTF16PtrFromString("agentbox setup")
	session := fwpmSession0{DisplayData: fwpmDisplayData0{Name: name}, TxnWaitTimeoutInMSec: infinite}
	var engine uintptr
	if err := wfpCall(procFwpmEngineOpen0, nil, 0, rpcCAuthnDefault, 0, uintptr(unsafe.Pointer(&session)), uintptr(unsafe.Pointer(&engine))); err != nil {
		return err
	}
	defer procFwpmEngineClose0.Call(engine)
	if err := wfpCall(procFwpmTransactionBegin0, nil, engine, uintptr(flags)); err != nil {
		return err
	}
	if err := f(engine); err != nil {
		procFwpmTransactionAbort0.Call(engine)
		return err
	}
	return wfpCall(procFwpmTransactionCommit0, nil, engine)
}

// installWFP replaces agentbox's provider, sublayer and filters for the
// offline user (userSID) in one transaction.
func installWFP(filters []WFPFilter, userSID string) error {
	sd, err := windows.SecurityDescriptorFromString("D:(A;;CC;;;" + userSID + ")") // CC = FWP_ACTRL_MATCH_FILTER
	if err != nil {
		return fmt.Errorf("user condition for %s: %w", userSID, err)
	}
	blob := &fwpByteBlob{Size: sd.Length(), Data: (*byte)(unsafe.Pointer(sd))}
	providerKey, sublayerKey := mustGUID("{"+WFPProvider+"}"), mustGUID("{"+WFPSublayer+"}")
	text := func(s string) *uint16 { p, _ := windows.UTF16PtrFromString(s); return p }
	err = withWFP(func(engine uintptr) error {
		for _, f := range filters {
			key := mustGUID("{" + f.Key + "}")
			if err := wfpCall(procFwpmFilterDeleteByKey0, wfpIgnoreOnDelete, engine, uintptr(unsafe.Pointer(&key))); err != nil {
				return err
			}
		}
		provider := fwpmProvider0{ProviderKey: providerKey, Flags: fwpmFlagPersistent,
			DisplayData: fwpmDisplayData0{Name: text("agentbox"), Description: text("agentbox: filters for the offline sandbox user")}}
		if err := wfpCall(procFwpmProviderAdd0, wfpIgnoreOnAddContainer, engine, uintptr(unsafe.Pointer(&provider)), 0); err != nil {
			return err
		}
		sublayer := fwpmSublayer0{SubLayerKey: sublayerKey, Flags: fwpmFlagPersistent, ProviderKey: &providerKey, Weight: 0x8000,
			DisplayData: fwpmDisplayData0{Name: text("agentbox"), Description: text("agentbox: filters for the offline sandbox user")}}
		if err := wfpCall(procFwpmSubLayerAdd0, wfpIgnoreOnAddContainer, engine, uintptr(unsafe.Pointer(&sublayer)), 0); err != nil {
			return err
		}
		for _, f := range filters {
			conds := []fwpmFilterCondition0{{FieldKey: conditionALEUserID, MatchType: fwpMatchEqual,
				Value: fwpValue0{Type: fwpSecurityDescriptorType, Value: uintptr(unsafe.Pointer(blob))}}}
			if f.Protocol != 0 {
				conds = append(conds, fwpmFilterCondition0{FieldKey: conditionIPProtocol, MatchType: fwpMatchEqual, Value: fwpValue0{Type: fwpUint8, Value: uintptr(f.Protocol)}})
			}
			if f.RemoteV4 != "" {
				ip := net.ParseIP(f.RemoteV4).To4()
				if ip == nil || f.IPv6 {
					return fmt.Errorf("filter %q: remote address %q is not an IPv4 address", f.Name, f.RemoteV4)
				}
				// FWP_UINT32, in host byte order.
				conds = append(conds, fwpmFilterCondition0{FieldKey: conditionIPRemoteAddress, MatchType: fwpMatchEqual, Value: fwpValue0{Type: fwpUint32, Value: uintptr(binary.BigEndian.Uint32(ip))}})
			}
			if f.RemotePort != 0 {
				conds = append(conds, fwpmFilterCondition0{FieldKey: conditionIPRemotePort, MatchType: fwpMatchEqual, Value: fwpValue0{Type: fwpUint16, Value: uintptr(f.RemotePort)}})
			}
			layers := map[string]windows.GUID{"connect": layerALEAuthConnectV4, "assign": layerALEResourceAssignV4, "accept": layerALEAuthRecvAcceptV4}
			if f.IPv6 {
				layers = map[string]windows.GUID{"connect": layerALEAuthConnectV6, "assign": layerALEResourceAssignV6, "accept": layerALEAuthRecvAcceptV6}
			}
			layer, ok := layers[f.Layer]
			if !ok {
				return fmt.Errorf("filter %q: unknown layer %q", f.Name, f.Layer)
			}
			action := uint32(fwpActionBlock)
			if f.Permit {
				action = fwpActionPermit
			}
			var weight fwpValue0 // FWP_EMPTY: the engine chooses
			if f.Weight != 0 {
				weight = fwpValue0{Type: fwpUint8, Value: uintptr(f.Weight)}
			}
			filter := fwpmFilter0{
				FilterKey:           mustGUID("{" + f.Key + "}"),
				DisplayData:         fwpmDisplayData0{Name: text(f.Name), Description: text("agentbox: " + f.Name)},
				Flags:               fwpmFlagPersistent,
				ProviderKey:         &providerKey,
				LayerKey:            layer,
				SubLayerKey:         sublayerKey,
				NumFilterConditions: uint32(len(conds)),
				FilterCondition:     &conds[0],
				Weight:              weight,
				Action:              fwpmAction0{Type: action},
			}
			var id uint64
			if err := wfpCall(procFwpmFilterAdd0, nil, engine, uintptr(unsafe.Pointer(&filter)), 0, uintptr(unsafe.Pointer(&id))); err != nil {
				return fmt.Errorf("filter %q: %w", f.Name, err)
			}
			runtime.KeepAlive(conds)
		}
		return nil
	})
	runtime.KeepAlive(sd)
	runtime.KeepAlive(blob)
	return err
}

// checkWFP names each of agentbox's filters that is missing.
func checkWFP(filters []WFPFilter) ([]string, error) { return readWFP(filters) }

// readWFP names each of agentbox's filters that is missing, in a
// read-only transaction: setup --check, and every run that needs the
// offline user (offlineFacts).
func readWFP(filters []WFPFilter) ([]string, error) {
	var missing []string
	err := withWFPTxn(fwpmTxnReadOnly, func(engine uintptr) error {
		for _, f := range filters {
			key := mustGUID("{" + f.Key + "}")
			var out *fwpmFilter0
			err := wfpCall(procFwpmFilterGetByKey0, nil, engine, uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&out)))
			if errors.Is(err, errWFPNotFound) {
				missing = append(missing, f.Name)
				continue
			}
			if err != nil {
				return err
			}
			procFwpmFreeMemory0.Call(uintptr(unsafe.Pointer(&out)))
		}
		return nil
	})
	return missing, err
}

// removeWFP removes agentbox's filters, sublayer and provider.
func removeWFP(filters []WFPFilter) error {
	providerKey, sublayerKey := mustGUID("{"+WFPProvider+"}"), mustGUID("{"+WFPSublayer+"}")
	return withWFP(func(engine uintptr) error {
		for _, f := range filters {
			key := mustGUID("{" + f.Key + "}")
			if err := wfpCall(procFwpmFilterDeleteByKey0, wfpIgnoreOnDelete, engine, uintptr(unsafe.Pointer(&key))); err != nil {
				return err
			}
		}
		if err := wfpCall(procFwpmSubLayerDeleteByKey, wfpIgnoreOnDeleteInUseToo, engine, uintptr(unsafe.Pointer(&sublayerKey))); err != nil {
			return err
		}
		return wfpCall(procFwpmProviderDeleteByKey, wfpIgnoreOnDeleteInUseToo, engine, uintptr(unsafe.Pointer(&providerKey)))
	})
}
