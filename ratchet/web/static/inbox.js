// The approvals inbox: everything any session waits for a person to decide.

import { get } from "./api.js";
import { PendingList } from "./pending.js";

export class Inbox {
  constructor({ list, empty }, { onDecided }) {
    this.empty = empty;
    this.pending = new PendingList(list, { showSession: true, onDecided });
  }

  async refresh() {
    this.pending.update(await get("/v1/approvals"));
    this.empty.hidden = this.pending.size > 0;
  }
}
