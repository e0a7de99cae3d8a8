// k6/encoding and k6/crypto against known vectors (RFC 4648, FIPS 180,
// RFC 4231 test case 2).
// args: -i 1
// exit: 0
import encoding from "k6/encoding";
import { b64encode, b64decode } from "k6/encoding";
import crypto from "k6/crypto";
import { check } from "k6";
export const options = { thresholds: { checks: ["rate==1"] } };
export default function () {
  check(null, {
    "b64 std": () => b64encode("foob") === "Zm9vYg==" && encoding.b64encode("fooba", "std") === "Zm9vYmE=",
    "b64 rawstd": () => b64encode("foob", "rawstd") === "Zm9vYg",
    "b64 url": () => b64encode("\xff\xfe", "url").length > 0 && b64encode(new Uint8Array([251, 255]).buffer, "url") === "-_8=",
    "b64 rawurl": () => b64encode(new Uint8Array([251, 255]).buffer, "rawurl") === "-_8",
    "b64decode string": () => b64decode("Zm9vYmFy", "std", "s") === "foobar",
    "b64decode buffer": () => new Uint8Array(b64decode("-_8", "rawurl"))[0] === 251,
    "md5": () => crypto.md5("abc", "hex") === "900150983cd24fb0d6963f7d28e17f72",
    "sha1": () => crypto.sha1("abc", "hex") === "a9993e364706816aba3e25717850c26c9cd0d89d",
    "sha256": () => crypto.sha256("abc", "hex") === "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "sha384 base64": () => crypto.sha384("abc", "base64") === "ywB1P0WjXou1oD1pmsZQBycsMqsO3tFjGotgWkP/W+2AhgcroefMI1i67KE0yCWn",
    "sha512": () => crypto.sha512("abc", "hex").startsWith("ddaf35a193617aba"),
    "hmac": () => crypto.hmac("sha256", "Jefe", "what do ya want for nothing?", "hex") === "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    "createHash": () => crypto.createHash("sha256").update("a").update("bc").digest("hex") === crypto.sha256("abc", "hex"),
    "createHMAC binary": () => new Uint8Array(crypto.createHMAC("sha256", "Jefe").update("what do ya want for nothing?").digest("binary"))[0] === 0x5b,
    "randomBytes": () => crypto.randomBytes(16).byteLength === 16,
  });
}
