// @ts-check
// The link protocol, loaded from protocol.json (the same file the daemon loads).
// validate() mirrors daemon/trawl/browser/protocol.py; the contract test runs both on the same cases.

let cached = null;

export async function loadProtocol() {
  if (!cached) {
    const res = await fetch(chrome.runtime.getURL("protocol.json"));
    cached = await res.json();
  }
  return cached;
}

function checkType(spec, value, proto, where) {
  if (spec.endsWith("[]")) {
    if (!Array.isArray(value)) return `${where}: expected a list`;
    for (let i = 0; i < value.length; i++) {
      const err = checkType(spec.slice(0, -2), value[i], proto, `${where}[${i}]`);
      if (err) return err;
    }
    return null;
  }
  if (spec.startsWith("enum:")) {
    const values = proto.enums[spec.slice(5)] || [];
    return values.includes(value) ? null : `${where}: ${JSON.stringify(value)} is not one of ${values.join(", ")}`;
  }
  switch (spec) {
    case "int":
      return Number.isInteger(value) ? null : `${where}: expected an integer`;
    case "num":
      return typeof value === "number" && Number.isFinite(value) ? null : `${where}: expected a number`;
    case "str":
      return typeof value === "string" ? null : `${where}: expected a string`;
    case "bool":
      return typeof value === "boolean" ? null : `${where}: expected true or false`;
    case "obj":
      return value !== null && typeof value === "object" && !Array.isArray(value) ? null : `${where}: expected an object`;
    default: {
      const record = proto.records[spec];
      if (!record) return `${where}: unknown type ${spec}`;
      return checkFields(record, value, proto, where);
    }
  }
}

function checkFields(fields, obj, proto, where) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return `${where}: expected an object`;
  for (const key of Object.keys(obj)) {
    if (key !== "type" && !(key in fields)) return `${where}: unknown field ${key}`;
  }
  for (const [name, rawSpec] of Object.entries(fields)) {
    const optional = rawSpec.endsWith("?");
    const spec = optional ? rawSpec.slice(0, -1) : rawSpec;
    if (obj[name] === undefined || obj[name] === null) {
      if (optional) continue;
      return `${where}: missing field ${name}`;
    }
    const err = checkType(spec, obj[name], proto, `${where}.${name}`);
    if (err) return err;
  }
  return null;
}

// Returns null when `msg` is a valid message sent by `sender` ("daemon" or "extension"), else a reason.
export function validate(proto, msg, sender) {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return "a message must be a JSON object";
  const spec = proto.messages[msg.type];
  if (!spec) return `unknown message type ${JSON.stringify(msg.type)}`;
  if (spec.from !== "any" && spec.from !== sender) return `${msg.type} is not sent by the ${sender}`;
  return checkFields(spec.fields, msg, proto, msg.type);
}
