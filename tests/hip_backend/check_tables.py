#!/usr/bin/env python3
"""Checks plugins/hip/src/tables.inc for completeness in both directions.

Every constant of each mapped CUDA type (from api/driver/cuda_h.json, the facts of CUDA
13.0's cuda.h) and of each mapped HIP type (from ROCm's installed headers) must have a row:
a counterpart or an explicit "none". Rows must name constants that exist.
usage: check_tables.py tables.inc cuda_h.json <hip include dir>
"""
import json
import os
import re
import sys

ROW = re.compile(r'^CM_(MAP|HIP_ONLY|CUDA_ONLY)\((\w+), (.*), "(.*)"\)\s*$')
PAIR = re.compile(r'CM_PAIR\((\w+), (\w+)\)')

# table -> (CUDA: enum typedef or macro prefix, HIP: enum name or macro regex)
# hipStreamWaitValue* are stream_wait_condition's (CUstreamWaitValue_flags), not stream flags.
TYPES = {
    'error': (('enum', 'CUresult'), ('enum', 'hipError_t')),
    'device_attribute': (('enum', 'CUdevice_attribute'), ('enum', 'hipDeviceAttribute_t')),
    'function_attribute': (('enum', 'CUfunction_attribute'), ('enum', 'hipFunction_attribute')),
    'jit_option': (('enum', 'CUjit_option'), ('enum', 'hipJitOption')),
    'pointer_attribute': (('enum', 'CUpointer_attribute'), ('enum', 'hipPointer_attribute')),
    'limit': (('enum', 'CUlimit'), ('enum', 'hipLimit_t')),
    'func_cache': (('enum', 'CUfunc_cache'), ('enum', 'hipFuncCache_t')),
    'memory_type': (('enum', 'CUmemorytype'), ('enum', 'hipMemoryType')),
    'memcpy_kind': (None, ('enum', 'hipMemcpyKind')),
    'stream_flag': (('enum', 'CUstream_flags'), ('macro', r'hipStream(?!WaitValue)[A-Z]\w*')),
    'event_flag': (('enum', 'CUevent_flags'), ('macro', r'hipEvent[A-Z]\w*')),
    'host_alloc_flag': (('macro', r'CU_MEMHOSTALLOC_\w+'), ('macro', r'hipHostMalloc[A-Z]\w*')),
    'host_register_flag': (('macro', r'CU_MEMHOSTREGISTER_\w+'), ('macro', r'hipHostRegister[A-Z]\w*')),
    'mem_attach_flag': (('enum', 'CUmemAttach_flags'), ('macro', r'hipMemAttach[A-Z]\w*')),
    'array_format': (('enum', 'CUarray_format'), ('enum', 'hipArray_Format')),
    'array3d_flag': (('macro', r'CUDA_ARRAY3D_\w+'), ('macro', r'hipArray[A-Z]\w*')),
    'address_mode': (('enum', 'CUaddress_mode'), ('enum', 'HIPaddress_mode_enum')),
    'filter_mode': (('enum', 'CUfilter_mode'), ('enum', 'HIPfilter_mode_enum')),
    'resource_type': (('enum', 'CUresourcetype'), ('enum', 'HIPresourcetype_enum')),
    'resource_view_format': (('enum', 'CUresourceViewFormat'), ('enum', 'HIPresourceViewFormat_enum')),
    'texture_flag': (('macro', r'CU_TRSF_\w+'), ('macro', r'HIP_TRSF_\w+')),
    'stream_wait_condition': (('enum', 'CUstreamWaitValue_flags'), ('macro', r'hipStreamWaitValue[A-Z]\w*')),
    'ipc_mem_flag': (('enum', 'CUipcMem_flags'), ('macro', r'hipIpcMem[A-Z]\w*')),
    'mem_advise': (('enum', 'CUmem_advise'), ('enum', 'hipMemoryAdvise')),
    # HIP names the host by a device argument (hipCpuDeviceId), not by a location type.
    'mem_location_type': (('enum', 'CUmemLocationType'),
                          [('enum', 'hipMemLocationType'), ('macro', r'hip(Cpu|Invalid)DeviceId')]),
}


def parse_rows(path):
    rows, errors = [], []
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line.startswith('CM_'):
            continue
        m = ROW.match(line)
        if not m:
            errors.append(f'{path}:{n}: unparseable row: {line}')
            continue
        kind, table, middle, meaning = m.groups()
        if not meaning.strip():
            errors.append(f'{path}:{n}: row without a meaning')
        hip = cuda = None
        if kind == 'MAP':
            pair = PAIR.search(middle)
            if pair:
                hip = middle.split(',')[0].strip()
                cuda = pair.groups()
            else:
                hip, cuda = [x.strip() for x in middle.split(',')]
        elif kind == 'HIP_ONLY':
            hip = middle.strip()
        else:
            cuda = middle.strip()
        rows.append((n, table, hip, cuda))
    return rows, errors


def hip_headers(include_dir):
    text = ''
    for name in ('hip_runtime_api.h', 'driver_types.h'):
        text += open(os.path.join(include_dir, name)).read()
    return re.sub(r'/\*.*?\*/', '', re.sub(r'//[^\n]*', '', text), flags=re.S)


def hip_enum(text, name):
    m = (re.search(r'typedef enum[^{;]*?\b' + name + r'\s*\{(.*?)\}\s*' + name + r'\s*;', text, re.S) or
         re.search(r'enum\s+' + name + r'\s*\{(.*?)\}', text, re.S))
    if not m:
        raise SystemExit(f'HIP enum {name} not found in the headers')
    return {x.split('=')[0].strip() for x in m.group(1).split(',') if x.strip()}


def main():
    tables_path, cuda_json, hip_dir = sys.argv[1:4]
    rows, errors = parse_rows(tables_path)
    items = json.load(open(cuda_json))['items']
    cuda_enums = {it['typedef']: {e['name'] for e in it['enumerators']}
                  for it in items if it['kind'] == 'enum' and it.get('typedef')}
    cuda_macros = {it['name'] for it in items if it['kind'] == 'macro'}
    hip_text = hip_headers(hip_dir)
    # Flag macros: hexadecimal, or decimal (hipIpcMemLazyEnablePeerAccess is 0), or a cast
    # negative device id (hipCpuDeviceId is ((int)-1)).
    hip_macros = set(re.findall(r'#define\s+(\w+)\s+(?:0x[0-9a-fA-F]+\b|[0-9]+\b|\(\(int\)-[0-9]+\))', hip_text))
    counted = 0
    for table, (cuda_type, hip_type) in TYPES.items():
        mine = [r for r in rows if r[1] == table]
        if not mine:
            errors.append(f'table {table}: no rows')
        if cuda_type:
            kind, what = cuda_type
            wanted = cuda_enums[what] if kind == 'enum' else {m for m in cuda_macros if re.fullmatch(what, m)}
            have = {r[3] for r in mine if isinstance(r[3], str)}
            for name in sorted(wanted - have):
                errors.append(f'table {table}: CUDA constant {name} has no row (add CM_MAP or CM_CUDA_ONLY)')
            for name in sorted(have - wanted):
                errors.append(f'table {table}: row names {name}, which is not a {what} constant')
            counted += len(wanted)
        else:  # memcpy kinds: pairs of CUmemorytype
            for r in mine:
                for side in r[3] or ():
                    if side not in cuda_enums['CUmemorytype']:
                        errors.append(f'table {table}: {side} is not a CUmemorytype')
        specs = hip_type if isinstance(hip_type, list) else [hip_type]
        wanted = set()
        for kind, what in specs:
            wanted |= hip_enum(hip_text, what) if kind == 'enum' else {m for m in hip_macros if re.fullmatch(what, m)}
        what = ' or '.join(w for _, w in specs)
        have = {r[2] for r in mine if r[2]}
        for name in sorted(wanted - have):
            errors.append(f'table {table}: HIP constant {name} has no row (add CM_MAP or CM_HIP_ONLY)')
        for name in sorted(have - wanted):
            errors.append(f'table {table}: row names {name}, which is not a {what} constant')
        counted += len(wanted)
    for table in {r[1] for r in rows} - set(TYPES):
        errors.append(f'unknown table {table}')
    if errors:
        print('\n'.join(errors))
        return 1
    print(f'{len(rows)} rows cover all {counted} constants (CUDA and HIP sides) of {len(TYPES)} tables')
    return 0


if __name__ == '__main__':
    sys.exit(main())
