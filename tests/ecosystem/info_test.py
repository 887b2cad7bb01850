"""cudamux-info on the mock (issue 8): 1 and 3 configured devices, CUDA_VISIBLE_DEVICES
reordering and hiding devices (checked against what the backend answers for each device),
refused plugins with their reasons, CUDA_* variables, compile cache, --json validity.

    info_test.py <cudamux-info> <refused-plugins dir> <work dir>
"""
import json
import os
import subprocess
import sys
import unittest

INFO, REFUSED_DIR, WORK = sys.argv[1:4]


def run(*args, env=None, config=None, check=True):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("CUDA_"):
            del e[k]
    e["CUDAMUX_BACKEND"] = "mock"
    if config is not None:
        path = os.path.join(WORK, "config-%d.toml" % abs(hash(config)))
        with open(path, "w") as f:
            f.write(config)
        e["CUDAMUX_CONFIG"] = path
    e.update(env or {})
    p = subprocess.run([INFO, *args], env=e, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("cudamux-info %s exited %d:\n%s\n%s" % (args, p.returncode, p.stdout, p.stderr))
    return p


def info(env=None, config=None, check=True):
    p = run("--json", env=env, config=config, check=check)
    return json.loads(p.stdout), p


THREE = "[mock]\ndevices = 3\n"


def bus_of(device):
    # "0000:1a:00.0" or "00000000:1A:00.0" -> 0x1a
    return int(device["pci_bus_id"].split(":")[1], 16)


class Info(unittest.TestCase):
    def test_one_device_text_and_json(self):
        d, _ = info()
        self.assertEqual(d["backend"]["name"], "mock")
        self.assertEqual(d["backend"]["cuInit"], "CUDA_SUCCESS")
        self.assertIn("CUDAMUX_BACKEND", d["backend"]["reason"])  # why: set by the environment
        self.assertEqual(len(d["devices"]), 1)
        dev = d["devices"][0]
        self.assertEqual(dev["attributes"]["CU_DEVICE_ATTRIBUTE_WARP_SIZE"], 32)
        self.assertGreater(len(dev["attributes"]), 100)  # every attribute, by name
        self.assertEqual(dev["attributes"]["CU_DEVICE_ATTRIBUTE_PCI_BUS_ID"], bus_of(dev))
        self.assertEqual(d["config"]["values"]["backend"]["from"], "CUDAMUX_BACKEND")
        self.assertEqual(d["enum_policy"]["CUresult"], "strict")
        text = run().stdout
        for needle in ("Configuration", "Plugins", "Backend", "Devices: 1", "CU_DEVICE_ATTRIBUTE_WARP_SIZE = 32",
                       "Enum policy", "Compile cache"):
            self.assertIn(needle, text)

    def test_three_devices_from_config(self):
        d, _ = info(config=THREE)
        self.assertTrue(d["config"]["source"].endswith(".toml"))
        self.assertEqual([x["ordinal"] for x in d["devices"]], [0, 1, 2])
        self.assertEqual([x["backend_ordinal"] for x in d["devices"]], [0, 1, 2])
        self.assertEqual(len({x["uuid"] for x in d["devices"]}), 3)
        self.assertIn("Devices: 3", run(config=THREE).stdout)

    def test_visible_devices_reorder_and_hide(self):
        full, _ = info(config=THREE)
        d, _ = info(config=THREE, env={"CUDA_VISIBLE_DEVICES": "2,0"})
        self.assertEqual([x["backend_ordinal"] for x in d["devices"]], [2, 0])
        self.assertEqual([x["uuid"] for x in d["devices"]], [full["devices"][2]["uuid"], full["devices"][0]["uuid"]])
        # What the backend answers for CUDA device i is backend device map[i]'s (the ordinal
        # mapping reaches the backend, not only the core's snapshot).
        for x in d["devices"]:
            self.assertEqual(x["attributes"]["CU_DEVICE_ATTRIBUTE_PCI_BUS_ID"], bus_of(x))
        self.assertNotEqual(bus_of(d["devices"][0]), bus_of(d["devices"][1]))

    def test_visible_devices_by_uuid_prefix(self):
        full, _ = info(config=THREE)
        uuid = full["devices"][1]["uuid"]
        d, _ = info(config=THREE, env={"CUDA_VISIBLE_DEVICES": uuid[:12]})
        self.assertEqual([x["backend_ordinal"] for x in d["devices"]], [1])

    def test_invalid_entry_ends_the_list(self):
        d, p = info(config=THREE, env={"CUDA_VISIBLE_DEVICES": "1,7,0"})
        self.assertEqual([x["backend_ordinal"] for x in d["devices"]], [1])
        notes = d["cuda_environment"]["effect"]["device_selection_notes"]
        self.assertTrue(any("'7'" in n and "out of range" in n for n in notes), notes)
        self.assertIn("'7'", p.stderr)  # logged as a warning too

    def test_no_visible_device(self):
        d, p = info(config=THREE, env={"CUDA_VISIBLE_DEVICES": ""}, check=False)
        self.assertEqual(d["backend"]["cuInit"], "CUDA_ERROR_NO_DEVICE")
        self.assertEqual(d["devices"], [])

    def test_refused_plugins_with_reasons(self):
        d, _ = info(env={"CUDAMUX_PLUGIN_PATH": REFUSED_DIR})
        by_name = {p["name"]: p for p in d["plugins"]}
        self.assertEqual(by_name["garbage"]["status"], "refused")
        self.assertIn("dynamic loader refused it", by_name["garbage"]["reason"])
        self.assertEqual(by_name["noabi"]["status"], "refused")
        self.assertIn("does not export 'cudamux_backend_abi_version'", by_name["noabi"]["reason"])
        self.assertEqual(by_name["wrongabi"]["status"], "refused")
        self.assertIn("plugin ABI version 999", by_name["wrongabi"]["reason"])
        self.assertEqual(by_name["mock"]["status"], "ok")
        self.assertEqual(d["plugin_search_path"][0]["path"], REFUSED_DIR)
        self.assertEqual(d["plugin_search_path"][0]["from"], "CUDAMUX_PLUGIN_PATH")
        text = run(env={"CUDAMUX_PLUGIN_PATH": REFUSED_DIR}).stdout
        self.assertIn("wrongabi: REFUSED", text)
        self.assertIn("reason: plugin ABI version 999", text)

    def test_refused_backend_is_reported(self):
        d, p = info(env={"CUDAMUX_PLUGIN_PATH": REFUSED_DIR, "CUDAMUX_BACKEND": "wrongabi"}, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(d["backend"]["cuInit"], "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED")
        self.assertIn("ABI version 999", p.stderr)

    def test_cuda_environment(self):
        d, _ = info(env={"CUDA_MODULE_LOADING": "EAGER", "CUDA_LAUNCH_BLOCKING": "1"})
        self.assertEqual(d["cuda_environment"]["effect"]["module_loading"], "EAGER")
        self.assertTrue(d["cuda_environment"]["effect"]["launch_blocking"])
        self.assertEqual(d["cuda_environment"]["set"]["CUDA_MODULE_LOADING"], "EAGER")
        d, _ = info()
        self.assertEqual(d["cuda_environment"]["effect"]["module_loading"], "LAZY")
        self.assertFalse(d["cuda_environment"]["effect"]["launch_blocking"])

    def test_device_order_pci_bus_id(self):
        d, _ = info(config=THREE, env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
        buses = [bus_of(x) for x in d["devices"]]
        self.assertEqual(buses, sorted(buses))

    def test_compile_cache(self):
        d, _ = info(env={"CUDA_CACHE_PATH": "/tmp/somewhere"})
        self.assertEqual(d["compile_cache"]["path"], "/tmp/somewhere")
        d, _ = info(env={"XDG_CACHE_HOME": "/tmp/xdg"})
        self.assertEqual(d["compile_cache"]["path"], "/tmp/xdg/cudamux")
        d, _ = info(env={"CUDA_CACHE_DISABLE": "1", "CUDA_CACHE_PATH": "/tmp/somewhere"})
        self.assertEqual(d["compile_cache"]["path"], "")
        self.assertIn("CUDA_CACHE_DISABLE", d["compile_cache"]["from"])
        d, _ = info(config='[mock]\ncache_dir = "/tmp/fromconfig"\n', env={"CUDA_CACHE_PATH": "/tmp/somewhere"})
        self.assertEqual(d["compile_cache"]["path"], "/tmp/fromconfig")

    def test_bad_config_is_reported(self):
        d, p = info(config='backend = 3\n', check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("backend", d["config"]["error"])

    def test_bad_argument(self):
        p = run("--frobnicate", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown argument", p.stderr)


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])
