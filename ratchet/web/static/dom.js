// A small element builder. Children that are strings become text nodes, never
// HTML, so nothing the API returns can inject markup.

export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "testid") element.dataset.testid = value;
    else if (key === "class") element.className = value;
    else if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  element.append(...children.flat().filter((child) => child !== null && child !== undefined));
  return element;
}

// `name(arg="value", n=1)`, as Ratchet describes a tool call.
export function describeCall(name, argumentsJson) {
  let args;
  try {
    const parsed = JSON.parse(argumentsJson || "{}");
    args = Object.entries(parsed)
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join(", ");
  } catch {
    args = argumentsJson;
  }
  return `${name}(${args})`;
}

export function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : "";
}
