import type { AuthContext } from '../context';
import type { WorkspaceDoc } from '../data/collections';
import { revokedNow } from './removal-times';

/** Deletes a workspace with its members, and revokes its API keys (every edge told). */
export async function deleteWorkspaceRecords(c: AuthContext, workspace: Pick<WorkspaceDoc, '_id'>) {
  const id = workspace._id;
  const keys = await c.collections.workspaceApiKeys.find({ workspaceId: id, revokedAt: null });
  await c.collections.workspaces.deleteOne({ _id: id });
  await c.collections.workspaceMembers.deleteMany({ workspaceId: id });
  await c.collections.workspaceApiKeys.updateMany(
    { workspaceId: id, revokedAt: null },
    { $set: revokedNow(c) },
  );
  for (const key of keys) await c.events.credentialRevoked('workspace_api_key', key._id, key.keyHash);
}
