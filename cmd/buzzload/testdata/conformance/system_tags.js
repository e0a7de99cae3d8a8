// --system-tags picks the tags the runner attaches: without group no group
// tag; vu and iter go into sample metadata, not tags.
// args: -i 1 --system-tags scenario,check,vu,iter --out json={tmp}/st.json
// exit: 0
// file-contains: {tmp}/st.json = {"metric":"iterations","type":"Point"
// file-contains: {tmp}/st.json = "tags":{"check":"c","scenario":"default"},"metadata":{"iter":"0","vu":"1"}
import { check, group } from "k6";
export default function () { group("g", () => check(1, { c: () => true })); }
