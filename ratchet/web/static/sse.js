// Server-Sent Events read from a fetch body (EventSource cannot POST or send headers).

// Yields {id, event, data} for each frame of `body`, `data` parsed as JSON.
// Comment lines (keep-alives) are skipped.
export async function* frames(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let finished = false;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame !== null) yield frame;
        end = buffer.indexOf("\n\n");
      }
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

export function parseFrame(block) {
  let id = null;
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") data.push(value);
    else if (name === "event") event = value;
    else if (name === "id") id = value;
  }
  if (data.length === 0) return null;
  return { id, event, data: JSON.parse(data.join("\n")) };
}
