/** The side panel: the followed sessions' modes (mode-control.ts) and the approvals waiting
 * for a person (approvals-ui.ts), with the paused requests decided lately. */
import { mountApprovals } from "./approvals-ui.js";
import { mountModes } from "./mode-control.js";

mountModes(document.getElementById("modes")!);
mountApprovals(document.getElementById("approvals")!, "panel");
